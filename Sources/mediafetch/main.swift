import Foundation
import MediaFetchCLI

#if canImport(Glibc)
    import CLinux

    // Two malloc arenas are plenty on the two cores this runs on; glibc's default (eight per core) keeps
    // megabytes resident for every thread that touched the heap.
    _ = mallopt(M_ARENA_MAX, 2)
#endif

exit(await CLI.main(Array(CommandLine.arguments.dropFirst())))
