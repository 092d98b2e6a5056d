/* http-mhd.h: libmicrohttpd, loaded when the HTTP transport starts rather than at exec. It links
 * GnuTLS, and with it p11-kit, nettle, gmp and more, whose constructors cost a stdio daemon about
 * 7 ms of its start and whose pages about 2 MiB of its RSS (issue 16.6; bench/README.md). The
 * HTTP transport's files include this after <microhttpd.h>: each MHD_* function they call is a
 * pointer filled by http_mhd_load(), so their code reads as before. */
#pragma once

#include <microhttpd.h>

typedef struct HttpMhd {
        typeof(MHD_start_daemon) *start_daemon;
        typeof(MHD_stop_daemon) *stop_daemon;
        typeof(MHD_quiesce_daemon) *quiesce_daemon;
        typeof(MHD_run) *run;
        typeof(MHD_get_timeout) *get_timeout;
        typeof(MHD_get_daemon_info) *get_daemon_info;
        typeof(MHD_get_connection_info) *get_connection_info;
        typeof(MHD_get_connection_values) *get_connection_values;
        typeof(MHD_lookup_connection_value) *lookup_connection_value;
        typeof(MHD_suspend_connection) *suspend_connection;
        typeof(MHD_resume_connection) *resume_connection;
        typeof(MHD_create_response_from_buffer) *create_response_from_buffer;
        typeof(MHD_create_response_from_callback) *create_response_from_callback;
        typeof(MHD_add_response_header) *add_response_header;
        typeof(MHD_queue_response) *queue_response;
        typeof(MHD_destroy_response) *destroy_response;
} HttpMhd;

extern HttpMhd http_mhd;

/* dlopen()s HTTP_MHD_SONAME once and fills http_mhd. Returns 0, or -ELIBACC (logged, naming the
 * library and dlerror()'s reason). */
int http_mhd_load(void);

#define MHD_start_daemon (*http_mhd.start_daemon)
#define MHD_stop_daemon (*http_mhd.stop_daemon)
#define MHD_quiesce_daemon (*http_mhd.quiesce_daemon)
#define MHD_run (*http_mhd.run)
#define MHD_get_timeout (*http_mhd.get_timeout)
#define MHD_get_daemon_info (*http_mhd.get_daemon_info)
#define MHD_get_connection_info (*http_mhd.get_connection_info)
#define MHD_get_connection_values (*http_mhd.get_connection_values)
#define MHD_lookup_connection_value (*http_mhd.lookup_connection_value)
#define MHD_suspend_connection (*http_mhd.suspend_connection)
#define MHD_resume_connection (*http_mhd.resume_connection)
#define MHD_create_response_from_buffer (*http_mhd.create_response_from_buffer)
#define MHD_create_response_from_callback (*http_mhd.create_response_from_callback)
#define MHD_add_response_header (*http_mhd.add_response_header)
#define MHD_queue_response (*http_mhd.queue_response)
#define MHD_destroy_response (*http_mhd.destroy_response)
