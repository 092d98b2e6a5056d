/* http-mhd.c: libmicrohttpd's functions, looked up when the HTTP transport starts (http-mhd.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "cleanup.h"
#include "http-mhd.h"
#include "log.h"
#include "project-config.h"

HttpMhd http_mhd;

int http_mhd_load(void) {
        static const struct {
                const char *name;
                size_t offset;
        } table[] = {
#define SYM(field) { "MHD_" #field, offsetof(HttpMhd, field) }
                SYM(start_daemon), SYM(stop_daemon), SYM(quiesce_daemon), SYM(run), SYM(get_timeout),
                SYM(get_daemon_info), SYM(get_connection_info), SYM(get_connection_values),
                SYM(lookup_connection_value), SYM(suspend_connection), SYM(resume_connection),
                SYM(create_response_from_buffer), SYM(create_response_from_callback),
                SYM(add_response_header), SYM(queue_response), SYM(destroy_response),
#undef SYM
        };
        static bool loaded;
        if (loaded)
                return 0;
        /* Never closed: the transport uses it until we exit. */
        void *lib = dlopen(HTTP_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
                log_error("cannot load %s for the HTTP transport: %s", HTTP_MHD_SONAME, dlerror());
                return -ELIBACC;
        }
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                void *f = dlsym(lib, table[i].name);
                if (!f) {
                        log_error("cannot load %s for the HTTP transport: %s", HTTP_MHD_SONAME, dlerror());
                        return -ELIBACC;
                }
                *(void **) ((char *) &http_mhd + table[i].offset) = f;
        }
        loaded = true;
        return 0;
}
