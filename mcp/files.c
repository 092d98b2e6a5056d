/* files.c: files in and out of a run (issue 10): what an input file may be called, base64, what a
 * returned file is (magic bytes first, the name second) and how it becomes MCP content (image
 * items, embedded resources). Pure: no I/O. The `files` argument itself is a leaf of tools-args.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "cleanup.h"
#include "mcp-internal.h"
#include "str-util.h"

/* Escaped as a message escapes a caller's value (mcp_escape), but whole. */
char *mcp_file_name_display(const char *name) {
        size_t n = strlen(name);
        char *out = malloc(n * 4 + 1); /* worst case: every byte as \xNN */
        if (out)
                mcp_escape(out, name, n, SIZE_MAX, "", NULL);
        return out;
}

char *mcp_file_name_check(const char *name, size_t n) {
        McpQuote buf;
        const char *q = mcp_quote(&buf, name, n);
        if (n == 0)
                return mcp_problem("must not be empty");
        if (n > MCP_FILE_NAME_MAX_BYTES)
                return mcp_problem("\"%s\" is %zu bytes, over the limit of %d", q, n, MCP_FILE_NAME_MAX_BYTES);
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) name[i];
                if (c == 0)
                        return mcp_problem("\"%s\" contains a NUL character", q);
                if (c < 0x20 || c == 0x7f)
                        return mcp_problem("\"%s\" contains a control character (0x%02x)", q, c);
                /* C1 controls, U+0080..U+009F: UTF-8 C2 80..C2 9F (names are valid UTF-8, from JSON). */
                if (c == 0xc2 && i + 1 < n && (unsigned char) name[i + 1] >= 0x80 && (unsigned char) name[i + 1] <= 0x9f)
                        return mcp_problem("\"%s\" contains a control character (U+%04X)", q,
                                       (unsigned) (unsigned char) name[i + 1]);
        }
        if (name[0] == '/')
                return mcp_problem("\"%s\" is an absolute path; names are relative paths inside the working directory", q);
        size_t depth = 0;
        for (const char *p = name, *end = name + n; p <= end;) {
                const char *slash = memchr(p, '/', (size_t) (end - p));
                size_t k = (size_t) ((slash ? slash : end) - p);
                if (k == 0)
                        return mcp_problem("\"%s\" has an empty path segment", q);
                if ((k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
                        return mcp_problem("\"%s\" has a '%.*s' segment; names are relative paths inside the working "
                                       "directory, without . or ..", q, (int) k, p);
                if (k > 255)
                        return mcp_problem("\"%s\" has a path segment over 255 bytes", q);
                if (++depth > MCP_FILE_DEPTH_MAX)
                        return mcp_problem("\"%s\" is nested more than %d levels deep", q, MCP_FILE_DEPTH_MAX);
                if (!slash)
                        break;
                p = slash + 1;
        }
        if (strcmp(name, EXEC_SCRIPT_NAME) == 0 || strcmp(name, EXEC_LAUNCHER_NAME) == 0)
                return mcp_problem("\"%s\" is reserved (the run's own script)", q);
        return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * base64 (RFC 4648 §4, the standard alphabet). */

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(unsigned char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

size_t mcp_base64_decoded_max(size_t n) {
        return n / 4 * 3 + 3;
}

int mcp_base64_decode(const char *in, size_t n, char *out, size_t *ret_len, size_t *ret_bad) {
        uint32_t acc = 0;
        size_t bits = 0, o = 0, pad = 0, sextets = 0;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) in[i];
                /* Line breaks and spaces: what MIME encoders (base64(1), Python's encodebytes) emit. */
                if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
                        continue;
                if (c == '=') {
                        pad++;
                        continue;
                }
                int v = b64_value(c);
                if (v < 0 || pad > 0) {
                        if (ret_bad)
                                *ret_bad = i;
                        return -EINVAL;
                }
                acc = (acc << 6) | (uint32_t) v;
                bits += 6;
                sextets++;
                if (bits >= 8) {
                        bits -= 8;
                        out[o++] = (char) ((acc >> bits) & 0xff);
                }
        }
        /* A lone sextet cannot encode a byte; padding, when present, must complete the quantum. */
        if (sextets % 4 == 1 || pad > 2 || (pad > 0 && (sextets + pad) % 4 != 0)) {
                if (ret_bad)
                        *ret_bad = n;
                return -EINVAL;
        }
        *ret_len = o;
        return 0;
}

char *mcp_base64_encode(const void *p, size_t n, size_t *ret_len) {
        const unsigned char *s = p;
        size_t len = (n + 2) / 3 * 4;
        char *out = malloc(len + 1);
        if (!out)
                return NULL;
        size_t o = 0, i = 0;
        for (; i + 3 <= n; i += 3) {
                uint32_t v = (uint32_t) s[i] << 16 | (uint32_t) s[i + 1] << 8 | s[i + 2];
                out[o++] = b64_alphabet[v >> 18];
                out[o++] = b64_alphabet[(v >> 12) & 63];
                out[o++] = b64_alphabet[(v >> 6) & 63];
                out[o++] = b64_alphabet[v & 63];
        }
        if (i < n) {
                uint32_t v = (uint32_t) s[i] << 16 | (i + 1 < n ? (uint32_t) s[i + 1] << 8 : 0);
                out[o++] = b64_alphabet[v >> 18];
                out[o++] = b64_alphabet[(v >> 12) & 63];
                out[o++] = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
                out[o++] = '=';
        }
        out[o] = '\0';
        if (ret_len)
                *ret_len = o;
        return out;
}

/* ---------------------------------------------------------------------------------------------
 * The result. */

int mcp_files_output_schema_add(json_t *schema) {
        json_t *props = json_object_get(schema, "properties"), *required = json_object_get(schema, "required");
        json_t *files = json_pack(
                "{s:s, s:s, s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}, s:[s,s,s,s]}}",
                "type", "array",
                "description", "files the run left in outputs/ (sorted by name), each with its size, its type "
                               "(from its bytes) and whether its bytes are in the content (an image item or an "
                               "embedded resource) or did not fit the return limits",
                "items", "type", "object", "properties", "name", "type", "string", "bytes", "type", "integer",
                "mime", "type", "string", "returned", "type", "boolean", "required", "name", "bytes", "mime",
                "returned");
        json_t *unlisted = json_pack("{s:s, s:s}", "type", "integer", "description",
                                     "entries of outputs/ beyond the listing limit (not in files)");
        if (!files || !unlisted || !json_is_object(props) || !json_is_array(required) ||
            json_object_set_new(props, "files", files) < 0 ||
            json_object_set_new(props, "files_unlisted", unlisted) < 0 ||
            json_array_append_new(required, json_string("files")) < 0 ||
            json_array_append_new(required, json_string("files_unlisted")) < 0)
                return -ENOMEM;
        return 0;
}

/* "outputs/a b.csv" → "mcp-execd://run/<id>/outputs/a%20b.csv": not a file: URI, so that no client
 * takes it for a path on its own machine. */
static char *resource_uri(const char *run_id, const char *name) {
        Buf b = {};
        static const char prefix[] = "mcp-execd://run/";
        if (buf_append(&b, prefix, sizeof(prefix) - 1) < 0 ||
            buf_append(&b, run_id ? run_id : "0", strlen(run_id ? run_id : "0")) < 0 || buf_append(&b, "/", 1) < 0) {
                buf_done(&b);
                return NULL;
        }
        for (const unsigned char *p = (const unsigned char *) name; *p; p++) {
                char esc[4];
                bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                             strchr("-._~/", *p);
                snprintf(esc, sizeof(esc), "%%%02X", *p);
                if (buf_append(&b, plain ? (const char *) p : esc, plain ? 1 : 3) < 0) {
                        buf_done(&b);
                        return NULL;
                }
        }
        return b.data;
}

/* The bodies of returned files are not put through jansson: its dump escapes strings a character
 * at a time (25 ms for a 270 KB base64 string, measured with jansson 2.14, against 0.5 ms for the
 * rest of a reply). They go in as placeholders, "mcp-execd-body-<nonce>-<i>", replaced in the
 * dumped text by mcp_files_splice(): base64 needs no escaping, text is escaped here in one pass.
 * The nonce is random per reply, so no output of the run can fake a placeholder. */
#define BODY_PREFIX "mcp-execd-body-"

static int placeholder(char *out, size_t size, const char *nonce, size_t i) {
        return snprintf(out, size, BODY_PREFIX "%s-%zu", nonce, i) < (int) size ? 0 : -ENAMETOOLONG;
}

int mcp_files_result_add(const ExecResult *r, json_t *sc, json_t *content, char nonce[static 17]) {
        _cleanup_(json_decrefp) json_t *list = json_array();
        if (!list || str_random_hex(nonce, 8) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_files; i++) {
                const ExecOutputFile *f = &r->files[i];
                /* The name is whatever bytes the run chose (issue 15): shown escaped, never as is. */
                _cleanup_free_ char *name = mcp_file_name_display(f->name);
                if (!name || json_array_append_new(list, json_pack("{s:s, s:I, s:s, s:b}", "name", name, "bytes",
                                                                   (json_int_t) f->bytes, "mime", f->mime,
                                                                   "returned", f->returned)) < 0)
                        return -ENOMEM;
                if (!f->returned)
                        continue;
                char body[64];
                if (placeholder(body, sizeof(body), nonce, i) < 0)
                        return -ENOMEM;
                json_t *item;
                if (mime_is_image(f->mime))
                        item = json_pack("{s:s, s:s, s:s}", "type", "image", "data", body, "mimeType", f->mime);
                else {
                        _cleanup_free_ char *uri = resource_uri(r->run_id, name);
                        item = uri ? json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "resource", "resource", "uri", uri,
                                               "mimeType", f->mime, file_is_text(f->data, f->len) ? "text" : "blob",
                                               body)
                                   : NULL;
                }
                if (!item || json_array_append_new(content, item) < 0)
                        return -ENOMEM;
        }
        if (json_object_set(sc, "files", list) < 0 ||
            json_object_set_new(sc, "files_unlisted", json_integer((json_int_t) r->files_unlisted)) < 0)
                return -ENOMEM;
        return 0;
}

/* Text (valid UTF-8, checked by file_is_text) as the inside of a JSON string. */
static int json_escape_append(Buf *b, const char *s, size_t n) {
        static const char hex[] = "0123456789abcdef";
        size_t run = 0;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c >= 0x20 && c != '"' && c != '\\')
                        continue;
                if (buf_append(b, s + run, i - run) < 0)
                        return -ENOMEM;
                char esc[7] = { '\\', (char) c, 0 };
                size_t k = 2;
                if (c == '\n')
                        esc[1] = 'n';
                else if (c == '\r')
                        esc[1] = 'r';
                else if (c == '\t')
                        esc[1] = 't';
                else if (c < 0x20) {
                        memcpy(esc, "\\u00", 4);
                        esc[4] = hex[c >> 4];
                        esc[5] = hex[c & 15];
                        k = 6;
                }
                if (buf_append(b, esc, k) < 0)
                        return -ENOMEM;
                run = i + 1;
        }
        return buf_append(b, s + run, n - run);
}

char *mcp_files_splice(char *json, const ExecResult *r, const char *nonce) {
        _cleanup_free_ char *owned = json; /* the text the placeholders are in: ours now, whatever happens */
        _cleanup_(buf_done) Buf b = {};
        const char *p = json;
        for (size_t i = 0; i < r->n_files; i++) {
                const ExecOutputFile *f = &r->files[i];
                if (!f->returned)
                        continue;
                char body[64];
                if (placeholder(body, sizeof(body), nonce, i) < 0)
                        return NULL;
                const char *at = strstr(p, body);
                if (!at)
                        return NULL;
                if (buf_append(&b, p, (size_t) (at - p)) < 0)
                        return NULL;
                if (mime_is_image(f->mime) || !file_is_text(f->data, f->len)) {
                        size_t n;
                        _cleanup_free_ char *b64 = mcp_base64_encode(f->data, f->len, &n);
                        if (!b64 || buf_append(&b, b64, n) < 0)
                                return NULL;
                } else if (json_escape_append(&b, f->data, f->len) < 0)
                        return NULL;
                p = at + strlen(body);
        }
        if (buf_append(&b, p, strlen(p)) < 0)
                return NULL;
        return b.data ? TAKE_PTR(b.data) : strdup("");
}
