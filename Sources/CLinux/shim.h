// Linux calls that Swift's Glibc module leaves out: it is built without _GNU_SOURCE.
#ifndef MEDIAFETCH_CLINUX_SHIM_H
#define MEDIAFETCH_CLINUX_SHIM_H

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>
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

/// A new file without a name in the folder `folder` (O_TMPFILE, open for writing): it vanishes if closed before a
/// link gives it one. Returns the descriptor, or -1 with errno (EOPNOTSUPP, EISDIR or EINVAL where the filesystem or
/// kernel makes no such files).
static inline int mf_open_unnamed(int folder, unsigned int mode) {
    return openat(folder, ".", __O_TMPFILE | O_WRONLY | O_CLOEXEC, mode); // O_TMPFILE is __O_TMPFILE's, GNU only
}

/// Gives the unnamed file `fd` the name `name` in `folder` (linkat with AT_EMPTY_PATH), never over an existing
/// name (EEXIST). Before Linux 6.10 this needs CAP_DAC_READ_SEARCH (ENOENT without it); /proc/self/fd is the other way.
static inline int mf_link_unnamed(int fd, int folder, const char *name) {
    return linkat(fd, "", folder, name, 0x1000); // AT_EMPTY_PATH, GNU only
}

/// The filesystem type of the one that holds fd (statfs's f_type), or 0 when it cannot be read.
static inline long mf_filesystem_type(int fd) {
    struct statfs info;
    return fstatfs(fd, &info) == 0 ? (long)info.f_type : 0;
}

// glibc's functions (sched.h declares them with _GNU_SOURCE only), declared here with a plain mask of 1,024 bits
// where sched.h has cpu_set_t (the same bytes) and int for pid_t: this header must not meet sched.h's GNU part.
extern int sched_getaffinity(int pid, unsigned long size, unsigned long *mask);
extern int sched_setaffinity(int pid, unsigned long size, const unsigned long *mask);
extern int sched_getcpu(void);

/// Words in a CPU mask here: 1,024 CPUs, glibc's cpu_set_t.
#define MF_CPU_MASK_WORDS 16

/// The CPUs the thread `tid` (0: the caller) may run on, into `mask` (MF_CPU_MASK_WORDS words). 0, or -1 with errno.
static inline int mf_get_affinity(int tid, unsigned long *mask) {
    return sched_getaffinity(tid, MF_CPU_MASK_WORDS * sizeof(unsigned long), mask);
}

/// Lets the thread `tid` run only on the CPUs in `mask`. 0, or -1 with errno.
static inline int mf_set_affinity(int tid, const unsigned long *mask) {
    return sched_setaffinity(tid, MF_CPU_MASK_WORDS * sizeof(unsigned long), mask);
}

#endif
