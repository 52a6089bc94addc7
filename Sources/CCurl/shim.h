#ifndef MEDIAFETCH_CCURL_SHIM_H
#define MEDIAFETCH_CCURL_SHIM_H

#include <curl/curl.h>

// Swift cannot call C variadic functions, so each libcurl setter and getter that MediaFetch uses
// gets one typed wrapper per argument type. The wrappers add nothing else: the return code comes back
// unchanged for the Swift side to check in one place.

// MARK: curl_easy_setopt

static inline CURLcode mf_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mf_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/// For options that take a C string; libcurl copies strings (since 7.17), so the pointer may die after the call.
static inline CURLcode mf_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/// For options that keep a pointer (error buffer, header list, callback user data): it must outlive the transfer.
static inline CURLcode mf_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mf_easy_setopt_write_function(CURL *handle, curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

/// An upload's body comes from this callback (CURLOPT_UPLOAD).
static inline CURLcode mf_easy_setopt_read_function(CURL *handle, curl_read_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, callback);
}

/// The header callback has the write callback's signature.
static inline CURLcode mf_easy_setopt_header_function(CURL *handle, curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}

static inline CURLcode mf_easy_setopt_xferinfo_function(CURL *handle, curl_xferinfo_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

// MARK: curl_easy_getinfo

static inline CURLcode mf_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode mf_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode mf_easy_getinfo_double(CURL *handle, CURLINFO info, double *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// The string stays owned by libcurl and lives as long as the handle.
static inline CURLcode mf_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

// MARK: curl_multi_setopt

static inline CURLMcode mf_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

static inline CURLMcode mf_multi_setopt_pointer(CURLM *handle, CURLMoption option, void *value) {
    return curl_multi_setopt(handle, option, value);
}

static inline CURLMcode mf_multi_setopt_socket_function(CURLM *handle, curl_socket_callback callback) {
    return curl_multi_setopt(handle, CURLMOPT_SOCKETFUNCTION, callback);
}

static inline CURLMcode mf_multi_setopt_timer_function(CURLM *handle, curl_multi_timer_callback callback) {
    return curl_multi_setopt(handle, CURLMOPT_TIMERFUNCTION, callback);
}

// MARK: CURLMsg

/// The result of a finished transfer; Swift sees the `data` union only awkwardly.
static inline CURLcode mf_msg_result(const CURLMsg *message) {
    return message->data.result;
}

#endif
