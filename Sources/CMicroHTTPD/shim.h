#ifndef MEDIAFETCH_CMICROHTTPD_SHIM_H
#define MEDIAFETCH_CMICROHTTPD_SHIM_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

// Swift cannot call C variadic functions: MHD_start_daemon and MHD_get_daemon_info get typed wrappers here,
// and the macros Swift does not import get constants. Nothing else is added.

/// Starts a daemon on `address` (its port 0 picks a free one) with one thread per connection, so that a
/// handler and a streaming reader may block, and the request-completed callback for freeing per-request state.
static inline struct MHD_Daemon *mf_start_daemon(
    unsigned int flags, const struct sockaddr *address, MHD_AccessHandlerCallback handler, void *context,
    MHD_RequestCompletedCallback completed, size_t memory_limit, unsigned int connection_limit,
    unsigned int timeout_seconds)
{
    return MHD_start_daemon(
        flags, 0, NULL, NULL, handler, context,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_NOTIFY_COMPLETED, completed, context,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
        MHD_OPTION_END);
}

/// The port the daemon listens on (the free one picked for port 0); 0 when it cannot say.
static inline uint16_t mf_daemon_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

static const enum MHD_Result mf_yes = MHD_YES;
static const enum MHD_Result mf_no = MHD_NO;
static const enum MHD_ValueKind mf_header_kind = MHD_HEADER_KIND;
static const enum MHD_ValueKind mf_argument_kind = MHD_GET_ARGUMENT_KIND;
static const enum MHD_ResponseMemoryMode mf_must_copy = MHD_RESPMEM_MUST_COPY;
static const uint64_t mf_size_unknown = MHD_SIZE_UNKNOWN;
static const ssize_t mf_reader_end_of_stream = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t mf_reader_end_with_error = MHD_CONTENT_READER_END_WITH_ERROR;

#endif
