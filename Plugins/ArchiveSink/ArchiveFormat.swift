import CArchive
import MediaFetchCore

/// The container an ``ArchiveSink`` writes.
///
/// An ``OpenEnumeration``: more formats may come in a later version, so a `switch` over them needs a `default`.
public struct ArchiveFormat: OpenEnumeration {
    /// The name, as a config spells it: `pax`.
    public let rawValue: String

    private init(_ rawValue: String) { self.rawValue = rawValue }

    /// POSIX pax (restricted): plain ustar headers, plus a pax extended header only for an entry that needs
    /// one (a long or non-ASCII name, a large size), which carries the name in UTF-8. Read by every tar.
    public static let pax = Self("pax")
    /// POSIX ustar: names up to 255 bytes (100 + 155 split at a `/`), files below 8 GiB; a name that does not
    /// fit is refused when planned. Names are written as UTF-8 bytes.
    public static let ustar = Self("ustar")
    /// GNU tar: long names through `././@LongLink` entries; names are written as UTF-8 bytes.
    public static let gnutar = Self("gnutar")
    /// Zip, entries stored uncompressed (previews are compressed already), UTF-8 names flagged as such.
    public static let zip = Self("zip")

    public static let allCases: [Self] = [.pax, .ustar, .gnutar, .zip]

    /// Selects the format and its options on a write handle.
    func configure(
        _ handle: OpaquePointer, check: (Int32, String) throws(ArchiveError) -> Void
    )
        throws(ArchiveError)
    {
        switch self {
        case .pax:
            try check(archive_write_set_format_pax_restricted(handle), "select the pax format")
        case .ustar:
            try check(archive_write_set_format_ustar(handle), "select the ustar format")
            // Without this the name is converted to the process's locale, which is ASCII under C.
            try check(archive_write_set_format_option(handle, "ustar", "hdrcharset", "UTF-8"), "write UTF-8 names")
        case .gnutar:
            try check(archive_write_set_format_gnutar(handle), "select the GNU tar format")
            try check(archive_write_set_format_option(handle, "gnutar", "hdrcharset", "UTF-8"), "write UTF-8 names")
        case .zip:
            try check(archive_write_set_format_zip(handle), "select the zip format")
            try check(archive_write_set_format_option(handle, "zip", "compression", "store"), "store zip entries")
        default:
            throw ArchiveError("this build cannot write the \(rawValue) format")
        }
    }

    /// Why `path` cannot be an entry name in this format, or nil when it can.
    func refusal(of path: String) -> String? {
        let bytes = Array(path.utf8)
        switch self {
        case .ustar:
            if bytes.count <= 100 { return nil }
            // The name is split at a slash into a prefix of at most 155 bytes and a name of at most 100.
            for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "/") {
                if index <= 155 && bytes.count - index - 1 <= 100 { return nil }
            }
            return "the name is longer than ustar allows (255 bytes, at most 100 after the last split); "
                + "use format: pax"
        case .zip:
            return bytes.count <= 65_535 ? nil : "the name is longer than zip allows"
        default:
            return nil
        }
    }

    /// The largest entry the format can hold.
    var maxEntrySize: Int64 {
        switch self {
        case .ustar: 8 * 1024 * 1024 * 1024 - 1
        default: Int64.max
        }
    }
}
