/* test-files.c: files in and out of a run (issue 10): input name validation, base64, the type of a
 * file from its bytes, and reading outputs/ back without following links; names shown escaped and
 * the reply backstop (issue 15). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "fd-util.h"
#include "mcp.h"
#include "outputs.h"

static void check_bad(const char *name, size_t len, const char *words) {
        char *why = mcp_file_name_check(name, len);
        if (!why)
                fail_msg("accepted: %.*s", (int) len, name);
        if (!strstr(why, words))
                fail_msg("%s: no '%s' in: %s", name, words, why);
        free(why);
}

static void test_names(void **state) {
        static const char *const good[] = { "a", "data.csv", "sub/dir/x.bin", "a.b/c..d/...e", ".hidden",
                                            "outputs/seed.txt", "é/ü.txt", "nbsp\xc2\xa0.txt", "\xc2\xa9" };
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                char *why = mcp_file_name_check(good[i], strlen(good[i]));
                if (why)
                        fail_msg("refused %s: %s", good[i], why);
        }
        check_bad("", 0, "empty");
        check_bad("/etc/x", 6, "absolute");
        check_bad("../x", 4, "'..'");
        check_bad("a/../../x", 9, "'..'");
        check_bad("a/./x", 5, "'.'");
        check_bad("a//b", 4, "empty path segment");
        check_bad("a/", 2, "empty path segment");
        check_bad("a\0b", 3, "NUL");
        check_bad("a\nb", 3, "control character (0x0a)");
        check_bad("a\x7f", 2, "control character (0x7f)");
        check_bad("a\xc2\x85" "b", 4, "control character (U+0085)");
        check_bad("\xc2\x9f", 2, "control character (U+009F)");
        check_bad("main.py", 7, "reserved");
        check_bad(EXEC_LAUNCHER_NAME, strlen(EXEC_LAUNCHER_NAME), "reserved");
        check_bad("a/b/c/d/e/f/g/h/i", 17, "levels deep");
        char longname[MCP_FILE_NAME_MAX_BYTES + 2];
        memset(longname, 'x', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        check_bad(longname, strlen(longname), "over the limit");
        /* The message shows the offender, escaped. */
        char *why = mcp_file_name_check("a\0b", 3);
        assert_non_null(strstr(why, "\"a\\x00b\""));
        free(why);
}

static void test_base64(void **state) {
        /* RFC 4648 §10 vectors, both ways. */
        static const char *const vec[][2] = { { "", "" },         { "f", "Zg==" },         { "fo", "Zm8=" },
                                              { "foo", "Zm9v" },  { "foob", "Zm9vYg==" },  { "fooba", "Zm9vYmE=" },
                                              { "foobar", "Zm9vYmFy" } };
        for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
                size_t n;
                char *e = mcp_base64_encode(vec[i][0], strlen(vec[i][0]), &n);
                assert_string_equal(e, vec[i][1]);
                assert_int_equal(n, strlen(vec[i][1]));
                free(e);
                char out[16];
                assert_int_equal(mcp_base64_decode(vec[i][1], strlen(vec[i][1]), out, &n, NULL), 0);
                assert_int_equal(n, strlen(vec[i][0]));
                assert_memory_equal(out, vec[i][0], n);
        }
        /* Every byte value survives a round trip. */
        unsigned char all[256];
        for (int i = 0; i < 256; i++)
                all[i] = (unsigned char) i;
        size_t n;
        char *e = mcp_base64_encode(all, sizeof(all), &n);
        char back[sizeof(all) + 8];
        assert_true(mcp_base64_decoded_max(n) <= sizeof(back));
        assert_int_equal(mcp_base64_decode(e, n, back, &n, NULL), 0);
        assert_int_equal(n, 256);
        assert_memory_equal(back, all, 256);
        free(e);
        /* Lenient where encoders differ: line breaks, no padding. */
        char out[16];
        assert_int_equal(mcp_base64_decode("Zm9v\nYmE", 8, out, &n, NULL), 0);
        assert_int_equal(n, 5);
        assert_memory_equal(out, "fooba", 5);
        /* Strict where it matters, with the offset of the offender. */
        size_t bad = 0;
        assert_int_equal(mcp_base64_decode("Zm9v!mFy", 8, out, &n, &bad), -EINVAL);
        assert_int_equal(bad, 4);
        assert_int_equal(mcp_base64_decode("Zg==Zg==", 8, out, &n, &bad), -EINVAL); /* data after padding */
        assert_int_equal(mcp_base64_decode("Z", 1, out, &n, &bad), -EINVAL);         /* a lone sextet */
        assert_int_equal(mcp_base64_decode("Zm9=", 4, out, &n, &bad), 0);
        assert_int_equal(mcp_base64_decode("Zg=", 3, out, &n, &bad), -EINVAL);      /* half padding */
}

static void test_mime(void **state) {
        static const unsigned char png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13 };
        static const unsigned char jpeg[] = { 0xff, 0xd8, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F' };
        assert_string_equal(file_mime(png, sizeof(png), false, "x.txt"), "image/png"); /* bytes, not name */
        assert_string_equal(file_mime(jpeg, sizeof(jpeg), false, "noext"), "image/jpeg");
        assert_string_equal(file_mime("GIF89a\x01\x00", 8, false, "a.png"), "image/gif");
        assert_string_equal(file_mime("GIF87a", 6, true, NULL), "image/gif");
        assert_string_equal(file_mime("RIFF\x10\0\0\0WEBPVP8 ", 16, false, "w"), "image/webp");
        assert_string_equal(file_mime("RIFF\x10\0\0\0WAVEfmt ", 16, false, "w.webp"), "application/octet-stream");
        /* A PNG by its name only is not an image. */
        assert_string_equal(file_mime("hello", 5, true, "fake.png"), "text/plain");
        assert_false(mime_is_image(file_mime("hello", 5, true, "fake.png")));
        assert_true(mime_is_image("image/webp"));
        assert_false(mime_is_image("image/svg+xml"));
        assert_string_equal(file_mime("a,b\n1,2\n", 8, true, "t.CSV"), "text/csv");
        assert_string_equal(file_mime("{}", 2, true, "r.json"), "application/json");
        assert_string_equal(file_mime("%PDF-1.7", 8, false, "x"), "application/pdf");
        assert_string_equal(file_mime("a\0b", 3, true, "x.csv"), "application/octet-stream");
        /* A head cut in the middle of a UTF-8 sequence is still text; a whole file is not. */
        assert_string_equal(file_mime("caf\xc3", 4, false, "x.txt"), "text/plain");
        assert_string_equal(file_mime("caf\xc3", 4, true, "x.txt"), "application/octet-stream");
        assert_true(file_is_text("caf\xc3\xa9\n", 6));
        assert_false(file_is_text("\xed\xa0\x80", 3)); /* a surrogate */
        assert_false(file_is_text("\xc0\xaf", 2));     /* overlong */
}

static int write_file(int dfd, const char *name, const char *s, size_t n) {
        return fd_write_file_at(dfd, name, s, n, 0644);
}

/* A fake run root: tmp/outputs with files, a link to a host file, a directory, a big file. */
static void test_outputs_collect(void **state) {
        char root[] = "/tmp/test-files-XXXXXX";
        assert_non_null(mkdtemp(root));
        int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(rootfd >= 0);
        assert_int_equal(mkdirat(rootfd, "tmp", 0755), 0);
        assert_int_equal(mkdirat(rootfd, "tmp/outputs", 0755), 0);
        int out = openat(rootfd, "tmp/outputs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(out >= 0);
        assert_int_equal(write_file(out, "figure-10.png", "\x89PNG\r\n\x1a\nB", 9), 0);
        assert_int_equal(write_file(out, "figure-2.png", "\x89PNG\r\n\x1a\nA", 9), 0);
        assert_int_equal(write_file(out, "data.csv", "a,b\n", 4), 0);
        assert_int_equal(symlinkat("/etc/passwd", out, "passwd"), 0);
        assert_int_equal(symlinkat("/etc", out, "etc"), 0);
        assert_int_equal(mkdirat(out, "sub", 0755), 0);
        assert_int_equal(write_file(out, "sub/x.txt", "x", 1), 0);
        char big[4096];
        memset(big, 'z', sizeof(big));
        assert_int_equal(write_file(out, "big.txt", big, sizeof(big)), 0);

        Outputs o;
        assert_int_equal(outputs_collect_at(rootfd, "/tmp", 100, &o), 0);
        /* Sorted in version order; links listed, never followed. */
        static const char *const names[] = { "outputs/big.txt",      "outputs/data.csv",   "outputs/etc",
                                             "outputs/figure-2.png", "outputs/figure-10.png", "outputs/passwd",
                                             "outputs/sub/x.txt" };
        assert_int_equal(o.n_files, sizeof(names) / sizeof(names[0]));
        for (size_t i = 0; i < o.n_files; i++)
                assert_string_equal(o.files[i].name, names[i]);
        assert_false(o.files[0].returned); /* 4096 bytes over a budget of 100 */
        assert_int_equal(o.files[0].bytes, 4096);
        assert_true(o.files[1].returned);
        assert_string_equal(o.files[1].mime, "text/csv");
        assert_memory_equal(o.files[1].data, "a,b\n", 4);
        assert_string_equal(o.files[2].mime, "inode/symlink");
        assert_false(o.files[2].returned);
        assert_string_equal(o.files[3].mime, "image/png");
        assert_memory_equal(o.files[3].data + 8, "A", 1);
        assert_string_equal(o.files[5].mime, "inode/symlink");
        assert_false(o.files[5].returned);
        assert_null(o.files[5].data);
        assert_true(o.files[6].returned);
        assert_int_equal(o.unlisted, 0);
        outputs_done(&o);

        /* Empty directories do not fill the listing: they have their own bound. */
        for (int i = 0; i < OUTPUTS_DIRS_MAX + 44; i++) {
                char d[16];
                snprintf(d, sizeof(d), "d%03d", i);
                assert_int_equal(mkdirat(out, d, 0755), 0);
        }
        assert_int_equal(outputs_collect_at(rootfd, "/tmp", 100, &o), 0);
        /* 301 directories (sub/ among them), 256 opened: 45 counted whichever they are; sub/x.txt
         * is listed if sub/ was among the first 256. */
        assert_int_equal(o.unlisted, 45);
        assert_true(o.n_files == 6 || o.n_files == 7);
        outputs_done(&o);

        /* outputs/ itself a link (to the host's /etc): nothing. */
        assert_int_equal(unlinkat(out, "sub/x.txt", 0), 0);
        close(out);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s/tmp/outputs", root);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(symlinkat("/etc", rootfd, "tmp/outputs"), 0);
        assert_int_equal(outputs_collect_at(rootfd, "/tmp", 1 << 20, &o), 0);
        assert_int_equal(o.n_files, 0);
        /* No outputs/ at all: nothing, no error. */
        assert_int_equal(unlinkat(rootfd, "tmp/outputs", 0), 0);
        assert_int_equal(outputs_collect_at(rootfd, "/tmp", 1 << 20, &o), 0);
        assert_int_equal(o.n_files, 0);
        close(rootfd);
        assert_int_equal(rm_rf(root), 0);
}

/* The same walk where openat2() answers ENOSYS, as under mcp-execd.service's RestrictSUIDSGID=
 * (systemd cannot filter its mode bits): the by-hand resolution lists, refuses and reads exactly
 * the same. In a child, which the filter stays in. */
static void test_outputs_collect_without_openat2(void **state) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
                if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0) < 0 ||
                    seccomp_load(ctx) < 0)
                        _exit(3);
                struct open_how how = { .flags = O_RDONLY | O_DIRECTORY, .resolve = RESOLVE_BENEATH };
                if (syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof(how)) >= 0 || errno != ENOSYS)
                        _exit(4);
                const struct CMUnitTest again[] = { cmocka_unit_test(test_outputs_collect) };
                _exit(cmocka_run_group_tests_name("outputs without openat2", again, NULL, NULL) == 0 ? 0 : 1);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static McpServer *server(void) {
        McpLimits l = { .default_timeout_s = 30, .max_timeout_s = 300, .max_code_bytes = 1 << 20,
                        .max_stdin_bytes = 1 << 20, .max_output_bytes = 1 << 20, .tmp_size_bytes = 64 << 20,
                        .max_input_bytes = 100, .max_return_bytes = 1 << 20, .limits_by = "rlimit" };
        McpServer *s = mcp_server_new(&l, "0");
        assert_non_null(s);
        McpAction a = {};
        const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                           "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";
        assert_int_equal(mcp_server_handle(s, init, strlen(init), &a), 0);
        mcp_action_done(&a);
        return s;
}

/* The files argument as the daemon gets it: decoded, in order; over the limit, a tool error. */
static void test_files_argument(void **state) {
        McpServer *s = server();
        McpAction a = {};
        const char *m = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                        "\"arguments\":{\"code\":\"print(1)\",\"files\":[{\"name\":\"a/b.txt\",\"content\":\"h\\u00e9\"},"
                        "{\"name\":\"c.bin\",\"content\":\"AP8=\",\"encoding\":\"base64\"}]}}}";
        assert_int_equal(mcp_server_handle(s, m, strlen(m), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_CALL);
        const McpExecArgs *args = mcp_call_args(a.call);
        assert_int_equal(args->n_files, 2);
        assert_string_equal(args->files[0].name, "a/b.txt");
        assert_int_equal(args->files[0].len, 3);
        assert_memory_equal(args->files[0].data, "h\xc3\xa9", 3);
        assert_int_equal(args->files[1].len, 2);
        assert_memory_equal(args->files[1].data, "\x00\xff", 2);
        mcp_action_done(&a);

        char big[512];
        snprintf(big, sizeof(big), "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"exec\",\"arguments\":{\"code\":\"print(1)\",\"files\":[{\"name\":\"a\",\"content\":\"%0101d\"}]}}}", 0);
        assert_int_equal(mcp_server_handle(s, big, strlen(big), &a), 0);
        assert_true(a.is_tool_error);
        assert_non_null(strstr(a.reply, "MCP_EXEC_MAX_INPUT_BYTES"));
        mcp_action_done(&a);

        /* "base64" followed by a NUL is no encoding of ours (a C comparison would take it). */
        const char *nul = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                          "\"arguments\":{\"code\":\"print(1)\",\"files\":[{\"name\":\"c.bin\",\"content\":\"AP8=\","
                          "\"encoding\":\"base64\\u0000\"}]}}}";
        assert_int_equal(mcp_server_handle(s, nul, strlen(nul), &a), 0);
        assert_true(a.is_tool_error);
        assert_non_null(strstr(a.reply, "files[0].encoding"));
        mcp_action_done(&a);
        mcp_server_free(s);
}

/* A result with files: the bytes are in the content items (spliced), valid JSON, text escaped; the
 * text item and structuredContent list them without bytes. */
static void test_result_content(void **state) {
        McpServer *s = server();
        McpAction a = {};
        const char *m = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                        "\"arguments\":{\"code\":\"print(1)\"}}}";
        assert_int_equal(mcp_server_handle(s, m, strlen(m), &a), 0);
        static const char png[] = "\x89PNG\r\n\x1a\n\x00\x01";
        static const char text[] = "q\"b\\\n\x01\xc3\xa9";
        ExecOutputFile files[] = {
                { .name = "outputs/a.png", .bytes = 10, .mime = "image/png", .returned = true, .data = png, .len = 10 },
                { .name = "outputs/big.bin", .bytes = 1 << 30, .mime = "application/octet-stream" },
                { .name = "outputs/t x.txt", .bytes = sizeof(text) - 1, .mime = "text/plain", .returned = true,
                  .data = text, .len = sizeof(text) - 1 },
        };
        ExecResult r = { .stdout_data = "mcp-execd-body-", .stdout_len = 15, .limits = "rlimit", .files = files,
                            .n_files = 3, .run_id = "0123456789abcdef", .files_unlisted = 7 };
        char *reply = mcp_call_reply_result(a.call, &r);
        assert_non_null(reply);
        json_error_t err;
        json_t *j = json_loads(reply, 0, &err);
        if (!j)
                fail_msg("invalid JSON: %s: %s", err.text, reply);
        json_t *content = json_object_get(json_object_get(j, "result"), "content");
        assert_int_equal(json_array_size(content), 3);
        json_t *img = json_array_get(content, 1), *res = json_object_get(json_array_get(content, 2), "resource");
        assert_string_equal(json_string_value(json_object_get(img, "type")), "image");
        assert_string_equal(json_string_value(json_object_get(img, "data")), "iVBORw0KGgoAAQ==");
        assert_string_equal(json_string_value(json_object_get(img, "mimeType")), "image/png");
        assert_string_equal(json_string_value(json_object_get(res, "uri")),
                            "mcp-execd://run/0123456789abcdef/outputs/t%20x.txt");
        /* \x01 is not text: the file goes as a blob. */
        assert_null(json_object_get(res, "text"));
        assert_string_equal(json_string_value(json_object_get(res, "blob")), "cSJiXAoBw6k=");
        json_t *sc = json_object_get(json_object_get(j, "result"), "structuredContent");
        assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "mcp-execd-body-");
        assert_int_equal(json_integer_value(json_object_get(sc, "files_unlisted")), 7);
        json_t *list = json_object_get(sc, "files");
        assert_int_equal(json_array_size(list), 3);
        assert_true(json_is_false(json_object_get(json_array_get(list, 1), "returned")));
        assert_int_equal(json_integer_value(json_object_get(json_array_get(list, 1), "bytes")), 1 << 30);
        const char *t = json_string_value(json_object_get(json_array_get(content, 0), "text"));
        assert_null(strstr(t, "iVBOR"));
        json_decref(j);
        free(reply);

        /* Text that JSON must escape, as text. */
        static const char esc[] = "q\"b\\\n\t\x1b\xc3\xa9\xf0\x9f\x98\x80";
        ExecOutputFile one = { .name = "outputs/e.txt", .bytes = sizeof(esc) - 1, .mime = "text/plain", .returned = true,
                              .data = esc, .len = sizeof(esc) - 1 };
        r.files = &one;
        r.n_files = 1;
        reply = mcp_call_reply_result(a.call, &r);
        j = json_loads(reply, 0, &err);
        if (!j)
                fail_msg("invalid JSON: %s: %s", err.text, reply);
        res = json_object_get(json_array_get(json_object_get(json_object_get(j, "result"), "content"), 1), "resource");
        assert_string_equal(json_string_value(json_object_get(res, "text")), esc);
        json_decref(j);
        free(reply);
        mcp_action_done(&a);
        mcp_server_free(s);
}

/* Issue 15: an output name is whatever bytes the run chose; it is shown with \xNN escapes. */
static void test_name_display(void **state) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "outputs/a b.csv", "outputs/a b.csv" },
                { "outputs/caf\xc3\xa9\xf0\x9f\x98\x80", "outputs/caf\xc3\xa9\xf0\x9f\x98\x80" },
                { "outputs/\xff\xfe.txt", "outputs/\\xff\\xfe.txt" },
                { "a\nb\tc\x1b\x7f", "a\\x0ab\\x09c\\x1b\\x7f" },
                { "c1\xc2\x85\xc2\x9f\xc2\xa0", "c1\\xc2\\x85\\xc2\\x9f\xc2\xa0" }, /* U+00A0 is not C1 */
                { "back\\slash", "back\\x5cslash" },                               /* so \x is unambiguous */
                { "\xc3", "\\xc3" },                                                /* cut sequence */
                { "\xe0\x80\xaf", "\\xe0\\x80\\xaf" },                              /* overlong */
                { "\xed\xa0\x80", "\\xed\\xa0\\x80" },                              /* surrogate */
                { "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80" },                     /* above U+10FFFF */
                { "\xc3\xa9\xff", "\xc3\xa9\\xff" },
                { "", "" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *d = mcp_file_name_display(cases[i].in);
                assert_non_null(d);
                assert_string_equal(d, cases[i].out);
                json_t *j = json_string(d); /* valid UTF-8: jansson takes it */
                assert_non_null(j);
                json_decref(j);
                free(d);
        }
}

static McpAction call_action(McpServer *s) {
        McpAction a = {};
        const char *m = "{\"jsonrpc\":\"2.0\",\"id\":\"k\\\"1\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                        "\"arguments\":{\"code\":\"print(1)\"}}}";
        assert_int_equal(mcp_server_handle(s, m, strlen(m), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_CALL);
        return a;
}

static json_t *parsed_reply(char *reply) {
        assert_non_null(reply);
        json_error_t err;
        json_t *j = json_loads(reply, 0, &err);
        if (!j)
                fail_msg("invalid JSON: %s: %s", err.text, reply);
        assert_string_equal(json_string_value(json_object_get(j, "id")), "k\"1");
        free(reply);
        return j;
}

static const char *reply_text(json_t *j) {
        return json_string_value(
                json_object_get(json_array_get(json_object_get(json_object_get(j, "result"), "content"), 0), "text"));
}

/* Issue 15: names that are not UTF-8 or hold control characters used to make the reply NULL (and
 * the call unanswered); now they are listed escaped, and the URI percent-encodes the shown name. */
static void test_result_odd_names(void **state) {
        McpServer *s = server();
        McpAction a = call_action(s);
        static const char text[] = "hi";
        ExecOutputFile files[] = {
                { .name = "outputs/\xff\xfe.txt", .bytes = 2, .mime = "text/plain", .returned = true, .data = text, .len = 2 },
                { .name = "outputs/n\n\t\x1b\x7f\xc2\x85.txt", .bytes = 2, .mime = "text/plain", .returned = true,
                  .data = text, .len = 2 },
                { .name = "outputs/big\xff", .bytes = 1 << 30, .mime = "application/octet-stream" },
        };
        ExecResult r = { .limits = "rlimit", .files = files, .n_files = 3, .run_id = "0123456789abcdef" };
        json_t *j = parsed_reply(mcp_call_reply_result(a.call, &r));
        json_t *result = json_object_get(j, "result");
        assert_true(json_is_false(json_object_get(result, "isError")));
        json_t *list = json_object_get(json_object_get(result, "structuredContent"), "files");
        assert_int_equal(json_array_size(list), 3);
        assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "name")),
                            "outputs/\\xff\\xfe.txt");
        assert_string_equal(json_string_value(json_object_get(json_array_get(list, 1), "name")),
                            "outputs/n\\x0a\\x09\\x1b\\x7f\\xc2\\x85.txt");
        assert_string_equal(json_string_value(json_object_get(json_array_get(list, 2), "name")), "outputs/big\\xff");
        json_t *content = json_object_get(result, "content");
        assert_int_equal(json_array_size(content), 3);
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(content, 1), "resource"), "uri")),
                            "mcp-execd://run/0123456789abcdef/outputs/%5Cxff%5Cxfe.txt");
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(content, 2), "resource"), "uri")),
                            "mcp-execd://run/0123456789abcdef/outputs/n%5Cx0a%5Cx09%5Cx1b%5Cx7f%5Cxc2%5Cx85.txt");
        json_decref(j);
        mcp_action_done(&a);
        mcp_server_free(s);
}

/* Issue 15: a reply that cannot be built is a tool error naming what failed, never NULL. */
static void test_reply_backstop(void **state) {
        McpServer *s = server();
        McpAction a = call_action(s);

        /* A result the encoder refuses: execute_python's fields that are not an object. */
        json_t *bad = json_string("not an object");
        ExecResult r = { .limits = "rlimit", .extra = bad, .run_id = "0123456789abcdef" };
        json_t *j = parsed_reply(mcp_call_reply_result(a.call, &r));
        assert_true(json_is_true(json_object_get(json_object_get(j, "result"), "isError")));
        assert_non_null(strstr(reply_text(j), "mcp-execd could not encode the result: the interpreter"));
        json_decref(j);

        /* A structured result that is not an object. */
        j = parsed_reply(mcp_call_reply_structured(a.call, bad));
        assert_true(json_is_true(json_object_get(json_object_get(j, "result"), "isError")));
        assert_non_null(strstr(reply_text(j), "mcp-execd could not encode the result: structuredContent"));
        json_decref(j);
        json_decref(bad);

        /* A tool error whose message quotes bytes that are not UTF-8: repaired, not dropped. */
        j = parsed_reply(mcp_call_reply_tool_error(a.call, "no such file: \xff.txt"));
        assert_string_equal(reply_text(j), "no such file: \xef\xbf\xbd.txt");
        json_decref(j);

        /* The answer of last resort, preformatted at parse time; handed over once. */
        j = parsed_reply(mcp_call_reply_oom(a.call));
        assert_true(json_is_true(json_object_get(json_object_get(j, "result"), "isError")));
        assert_string_equal(reply_text(j), "mcp-execd could not build the reply: out of memory");
        json_decref(j);
        assert_null(mcp_call_reply_oom(a.call));

        mcp_action_done(&a);
        mcp_server_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_base64),
                cmocka_unit_test(test_mime),
                cmocka_unit_test(test_outputs_collect),
                cmocka_unit_test(test_outputs_collect_without_openat2),
                cmocka_unit_test(test_files_argument),
                cmocka_unit_test(test_result_content),
                cmocka_unit_test(test_name_display),
                cmocka_unit_test(test_result_odd_names),
                cmocka_unit_test(test_reply_backstop),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
