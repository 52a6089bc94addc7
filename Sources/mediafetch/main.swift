import Foundation
import MediaFetchCLI

#if canImport(Glibc)
    import CLinux

    // Two malloc arenas are plenty on the two cores this runs on; glibc's default (eight per core) keeps
    // megabytes resident for every thread that touched the heap.
    _ = mallopt(M_ARENA_MAX, 2)
    // Fixed thresholds, so that freed memory stays for the next transfer: libcurl allocates a 128 KiB receive
    // buffer per transfer, and with glibc's adaptive ones each was handed back to the kernel and faulted in
    // again page by page (10,000 to 16,000 page faults in a run of 2,000 files; 3,100 with these). Peak memory is
    // unchanged. Blocks of 1 MiB and more are mapped and unmapped each time; none is allocated per file.
    _ = mallopt(M_MMAP_THRESHOLD, 1 << 20)
    _ = mallopt(M_TRIM_THRESHOLD, 4 << 20)
    // The soft limit of open files raised towards the hard one (Go's runtime does the same): a durable run of many
    // small files keeps up to two descriptors for each store waiting on a group flush, and the more wait, the
    // fewer flushes (Pipeline.workerLimit, about 1,100 descriptors at most). Not past 8,192: the plugin programs a
    // run starts inherit it (Go puts the old limit back for its children; Foundation's Process cannot), and some
    // close every descriptor up to the limit as they start. Serve's HTTP server polls, so descriptors past 1,024
    // are no trouble to it.
    var openFiles = rlimit()
    if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &openFiles) == 0, openFiles.rlim_cur < min(openFiles.rlim_max, 8192) {
        openFiles.rlim_cur = min(openFiles.rlim_max, 8192)
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &openFiles)
    }
#endif

exit(await CLI.main(Array(CommandLine.arguments.dropFirst()), registry: BundledPlugins.registry))
