/* mime.c: what a file is, from its first bytes (magic numbers first) and, for text, its name. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "mime.h"

static bool utf8_text(const unsigned char *s, size_t n, bool may_be_cut) {
        for (size_t i = 0; i < n;) {
                unsigned char c = s[i];
                if (c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != 0x1b))
                        return false;
                size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
                if (k == 0 || (k == 2 && c < 0xc2) || (k == 4 && c > 0xf4))
                        return false;
                if (i + k > n)
                        return may_be_cut; /* a sequence cut by the end of the head */
                for (size_t j = 1; j < k; j++)
                        if ((s[i + j] & 0xc0) != 0x80)
                                return false;
                /* Overlong forms, surrogates and code points above U+10FFFF (jansson refuses them). */
                if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f) ||
                    (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] > 0x8f))
                        return false;
                i += k;
        }
        return true;
}

bool file_is_text(const void *data, size_t n) {
        return utf8_text(data, n, false);
}

const char *file_mime(const void *head, size_t n, bool complete, const char *name) {
        const unsigned char *h = head;
        /* The four image types an MCP client displays, by their signatures, never by the name. */
        if (n >= 8 && memcmp(h, "\x89PNG\r\n\x1a\n", 8) == 0)
                return "image/png";
        if (n >= 3 && memcmp(h, "\xff\xd8\xff", 3) == 0)
                return "image/jpeg";
        if (n >= 6 && (memcmp(h, "GIF87a", 6) == 0 || memcmp(h, "GIF89a", 6) == 0))
                return "image/gif";
        if (n >= 12 && memcmp(h, "RIFF", 4) == 0 && memcmp(h + 8, "WEBP", 4) == 0)
                return "image/webp";
        if (n >= 5 && memcmp(h, "%PDF-", 5) == 0)
                return "application/pdf";
        if (n >= 4 && memcmp(h, "PK\x03\x04", 4) == 0)
                return "application/zip";
        if (n >= 2 && memcmp(h, "\x1f\x8b", 2) == 0)
                return "application/gzip";
        if (n >= 6 && memcmp(h, "\x93NUMPY", 6) == 0)
                return "application/octet-stream";

        bool text = utf8_text(h, n, !complete);
        static const struct {
                const char *ext, *mime;
        } text_types[] = {
                { ".csv", "text/csv" },          { ".tsv", "text/tab-separated-values" },
                { ".json", "application/json" }, { ".md", "text/markdown" },
                { ".html", "text/html" },        { ".htm", "text/html" },
                { ".svg", "image/svg+xml" },     { ".xml", "application/xml" },
                { ".txt", "text/plain" },        { ".log", "text/plain" },
                { ".py", "text/x-python" },      { ".yaml", "application/yaml" },
                { ".yml", "application/yaml" },  { ".tex", "text/x-tex" },
        };
        const char *dot = name ? strrchr(name, '.') : NULL;
        if (text && dot && !strchr(dot, '/'))
                for (size_t i = 0; i < ELEMENTSOF(text_types); i++)
                        if (strcasecmp(dot, text_types[i].ext) == 0)
                                return text_types[i].mime;
        return text ? "text/plain" : "application/octet-stream";
}

bool mime_is_image(const char *mime) {
        return mime && (strcmp(mime, "image/png") == 0 || strcmp(mime, "image/jpeg") == 0 ||
                        strcmp(mime, "image/gif") == 0 || strcmp(mime, "image/webp") == 0);
}
