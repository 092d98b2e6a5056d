/* mime.h: the type of a file (an output a run left) from its bytes and name. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The type of a file from its first bytes (head, n of them; complete: n is the whole file) and, for
 * text, its name: image/png, image/jpeg, image/gif, image/webp by signature, a few more, text types
 * by extension, else text/plain or application/octet-stream. A static string. */
const char *file_mime(const void *head, size_t n, bool complete, const char *name);
bool mime_is_image(const char *mime);
/* True if the bytes are UTF-8 text (no NUL, no control characters but whitespace and ESC). */
bool file_is_text(const void *data, size_t n);
