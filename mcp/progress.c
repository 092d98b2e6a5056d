/* progress.c: notifications/progress for a call that asked for it (a progressToken in _meta, both
 * eras), on any transport, with the run's output as it arrives. */
#include <errno.h>
#include <stdlib.h>

#include "cleanup.h"
#include "mcp-internal.h"

/* Where the output goes: the notification's params._meta, under our own key, as
 * {"stdout": "…", "stderr": "…"} (only the streams with new text; "truncated": true once the cap
 * stopped the stream). Not in `message`: the schema calls it "an optional message describing the
 * current progress", and a UI shows the latest one in place of the last, so deltas there would be
 * lost or garbled, and stdout and stderr could not be told apart without markers the output itself
 * may contain. Neither 2025-11-25 nor 2026-07-28 has a place for partial results (no such SEP in
 * the 2026 changelog); both SDKs (1.x `@modelcontextprotocol/sdk`, 2.x `@modelcontextprotocol/client`)
 * hand the notification's params, _meta included, to the request's `onprogress`. */
#define MCP_PROGRESS_OUTPUT_KEY "io.github.mcp-execd/output"

static int set_text(json_t *o, const char *key, const char *p, size_t n) {
        if (n == 0)
                return 0;
        json_t *s = json_stringn(p ?: "", n); /* NULL for invalid UTF-8: the caller repairs first */
        if (!s || json_object_set_new(o, key, s) < 0)
                return -ENOMEM;
        return 0;
}

char *mcp_progress_new(const char *token_json, uint64_t progress, uint64_t total, const char *message,
                       const McpProgressOutput *out) {
        json_error_t err;
        json_t *token = json_loads(token_json, JSON_DECODE_ANY, &err);
        if (!token)
                return NULL;
        _cleanup_(json_decrefp) json_t *params = json_pack("{s:o, s:I}", "progressToken", token, "progress",
                                                           (json_int_t) progress);
        if (!params)
                return NULL;
        if (total > 0 && json_object_set_new(params, "total", json_integer((json_int_t) total)) < 0)
                return NULL;
        if (message && json_object_set_new(params, "message", json_string(message)) < 0)
                return NULL;
        if (out && (out->stdout_len > 0 || out->stderr_len > 0 || out->truncated)) {
                json_t *o = json_object(); /* params' once set: borrowed below */
                json_t *meta = o ? json_pack("{s:o}", MCP_PROGRESS_OUTPUT_KEY, o) : NULL;
                if (!meta || json_object_set_new(params, "_meta", meta) < 0)
                        return NULL;
                if (set_text(o, "stdout", out->stdout_data, out->stdout_len) < 0 ||
                    set_text(o, "stderr", out->stderr_data, out->stderr_len) < 0)
                        return NULL;
                if (out->truncated && json_object_set_new(o, "truncated", json_true()) < 0)
                        return NULL;
        }
        _cleanup_(json_decrefp) json_t *m = json_pack("{s:s, s:s, s:O}", "jsonrpc", "2.0", "method",
                                                      "notifications/progress", "params", params);
        return m ? mcp_json_dump(m) : NULL;
}
