// Linux calls that Swift's Glibc module leaves out: it is built without _GNU_SOURCE.
#ifndef MEDIAFETCH_CLINUX_SHIM_H
#define MEDIAFETCH_CLINUX_SHIM_H

#include <malloc.h>

// glibc's own prototype (fcntl.h, _GNU_SOURCE only).
extern int sync_file_range(int fd, long long offset, long long count, unsigned int flags);

// glibc's own prototype (unistd.h, _GNU_SOURCE only): flushes the filesystem that holds fd.
extern int syncfs(int fd);

/// Starts writing a file's dirty pages to disk and returns without waiting (SYNC_FILE_RANGE_WRITE), so
/// that a later fsync finds most of the work done. Returns 0, or -1 with errno set.
static inline int mf_start_writeback(int fd) {
    return sync_file_range(fd, 0, 0, 2 /* SYNC_FILE_RANGE_WRITE */);
}

#endif
