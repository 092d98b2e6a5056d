/* cleanup.h: scope-bound ownership helpers (the systemd idiom), shared by every folder. */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(fn) __attribute__((cleanup(fn)))

static inline void freep(void *p) {
        free(*(void **) p);
}

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/* Define "typep(type **)" calling "destroy(type *)" when the pointer is non-NULL. */
#define DEFINE_POINTER_CLEANUP(type, destroy)                   \
        static inline void destroy##p(type **p) {               \
                if (*p)                                         \
                        (void) destroy(*p);                     \
        }

#define TAKE_PTR(ptr) ({ __typeof__(ptr) *_pp = &(ptr); __typeof__(ptr) _v = *_pp; *_pp = NULL; _v; })
#define TAKE_FD(fd) ({ int *_pfd = &(fd); int _v = *_pfd; *_pfd = -EBADF; _v; })

/* Evaluate a libc call that returns -1 + errno and turn it into -errno. */
#define NEG_ERRNO(expr) ({ __typeof__(expr) _r = (expr); _r < 0 ? -errno : _r; })

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a < _b ? _a : _b; })
#define MAX(a, b) ({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a > _b ? _a : _b; })

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}
