#if canImport(Glibc)
    import Glibc
#endif

/// Runs libarchive calls under a UTF-8 `LC_CTYPE` on the calling thread only.
///
/// Why: libarchive converts names through the thread's locale even through its `_utf8` functions (its
/// 3.6 pax writer crashes on a non-ASCII name under the C locale, and its readers return no UTF-8 name).
/// `uselocale` changes the current thread alone, and the previous setting is restored before returning,
/// so the process's locale (and other threads) never see a change.
enum UTF8Locale {
    static func run<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        guard let locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", nil) ?? newlocale(LC_CTYPE_MASK, "en_US.UTF-8", nil)
        else { return try body() }
        let previous = uselocale(locale)
        defer {
            uselocale(previous)
            freelocale(locale)
        }
        return try body()
    }
}
