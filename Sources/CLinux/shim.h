// Linux calls that Swift's Glibc module leaves out: it is built without _GNU_SOURCE.
#ifndef MEDIAFETCH_CLINUX_SHIM_H
#define MEDIAFETCH_CLINUX_SHIM_H

#include <malloc.h>
#include <sys/vfs.h>
#include <sys/xattr.h>

// glibc's own prototype (fcntl.h, _GNU_SOURCE only).
extern int sync_file_range(int fd, long long offset, long long count, unsigned int flags);

// glibc's own prototype (unistd.h, _GNU_SOURCE only): flushes the filesystem that holds fd.
extern int syncfs(int fd);

/// Starts writing a file's dirty pages out and returns without waiting for them (SYNC_FILE_RANGE_WRITE):
/// a later fsync then finds most of the work done. Returns 0, or -1 with errno.
static inline int mf_start_write_out(int fd) {
    return sync_file_range(fd, 0, 0, 2);
}

/// Writes a file's dirty pages out and waits for them (SYNC_FILE_RANGE_WAIT_BEFORE | WRITE | WAIT_AFTER),
/// without flushing the disk's cache or the file's metadata. Its use here is the error it returns: a
/// write-back error on this file that no descriptor opened before has seen. Returns 0, or -1 with errno.
static inline int mf_wait_written(int fd) {
    return sync_file_range(fd, 0, 0, 1 | 2 | 4);
}

/// The filesystem type of the one that holds fd (statfs's f_type), or 0 when it cannot be read.
static inline long mf_filesystem_type(int fd) {
    struct statfs info;
    return fstatfs(fd, &info) == 0 ? (long)info.f_type : 0;
}

#endif
