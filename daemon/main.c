/* main.c: mcp-execd's entry point: the command line, the configuration, and one daemon object
 * (daemon.h) made, run and freed; or, with --report, the journal's run records summed up
 * (report-journal.h) and no daemon at all. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "config.h"
#include "daemon.h"
#include "http-transport.h"
#include "log.h"
#include "project-config.h"
#include "pyexec.h"
#include "report-journal.h"
#include "report-time.h"
#include "tenants.h"

static void help(void) {
        printf("Usage: %s [OPTIONS]\n"
               "\n"
               "MCP server whose exec tool runs Python in a fresh, network-less sandbox and returns its\n"
               "output, exit status and resource use. Speaks MCP over stdio (newline-delimited JSON-RPC).\n"
               "\n"
               "Options:\n"
               "  -h --help       Show this help and exit\n"
               "     --version    Show the version and exit\n"
               "     --report     Sum up the journal's run records and exit (mcp-execd(8), REPORT):\n"
               "       --since TIME, --until TIME   the range (-1h, @1733400000, '2026-12-06 14:00:00', ...)\n"
               "       --tenant NAME                one tenant's calls only\n"
               "       --json                       one JSON object instead of tables\n"
               "       --file PATH, --directory DIR journal files to read instead of this machine's\n"
               "\n"
               "Configuration comes from the environment (see README.md or mcp-execd(8)):\n",
               program_invocation_short_name);
        config_print_help(stdout);
}

/* What --report and its options asked for. */
typedef struct Args {
        bool report;
        const char *since, *until; /* as given, read once all options are known */
        ReportOptions opts;
        size_t n_files;
        const char *report_only; /* the first option given that needs --report, for the error */
} Args;

static void args_done(Args *a) {
        free(a->opts.files);
}

/* --since or --until, as report_time_parse() reads it; on error a message naming the option. */
static int parse_time_arg(const char *option, const char *value, uint64_t now, uint64_t *ret) {
        int r = report_time_parse(value, now, ret);
        if (r < 0)
                fprintf(stderr, "%s: %s '%s': %s; accepted: %s\n", program_invocation_short_name, option, value,
                        r == -ERANGE ? "out of range (before 1970 or after 9999)" : "not a time",
                        REPORT_TIME_FORMS);
        return r;
}

/* The report's options once all are read: the range, and what goes together. */
static int args_check_report(Args *a) {
        if (!a->report) {
                if (a->report_only) {
                        fprintf(stderr, "%s: --%s is an option of --report; see --help\n", program_invocation_short_name,
                                a->report_only);
                        return -EINVAL;
                }
                return 0;
        }
        if (a->opts.files && a->opts.directory) {
                fprintf(stderr, "%s: --file and --directory cannot be used together\n", program_invocation_short_name);
                return -EINVAL;
        }
        struct timespec ts;
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t now = (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
        a->opts.range = (ReportRange) { .since_usec = 0, .until_usec = UINT64_MAX };
        if (a->since && parse_time_arg("--since", a->since, now, &a->opts.range.since_usec) < 0)
                return -EINVAL;
        if (a->until && parse_time_arg("--until", a->until, now, &a->opts.range.until_usec) < 0)
                return -EINVAL;
        if (a->opts.range.since_usec > a->opts.range.until_usec) {
                fprintf(stderr, "%s: --since '%s' is after --until '%s'\n", program_invocation_short_name, a->since,
                        a->until);
                return -EINVAL;
        }
        return 0;
}

static int parse_argv(int argc, char **argv, Args *a) {
        enum { ARG_VERSION = 0x100, ARG_REPORT, ARG_SINCE, ARG_UNTIL, ARG_TENANT, ARG_JSON, ARG_FILE, ARG_DIRECTORY };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "report", no_argument, NULL, ARG_REPORT },
                { "since", required_argument, NULL, ARG_SINCE },
                { "until", required_argument, NULL, ARG_UNTIL },
                { "tenant", required_argument, NULL, ARG_TENANT },
                { "json", no_argument, NULL, ARG_JSON },
                { "file", required_argument, NULL, ARG_FILE },
                { "directory", required_argument, NULL, ARG_DIRECTORY },
                {},
        };
        int c, index = -1;
        opterr = 0;
        /* The leading ':' makes a missing value ':' rather than '?' (getopt(3)). */
        while ((c = getopt_long(argc, argv, ":h", options, &index)) >= 0) {
                if (c >= ARG_SINCE && !a->report_only)
                        a->report_only = options[index].name;
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("%s %s\n", PROJECT_NAME, PROJECT_VERSION);
                        return 0;
                case ARG_REPORT:
                        a->report = true;
                        break;
                case ARG_SINCE:
                        a->since = optarg;
                        break;
                case ARG_UNTIL:
                        a->until = optarg;
                        break;
                case ARG_TENANT:
                        if (!tenant_name_valid(optarg)) {
                                fprintf(stderr, "%s: --tenant '%s': not a tenant name (1 to %d letters, digits, _ or -)\n",
                                        program_invocation_short_name, optarg, TENANT_NAME_MAX);
                                return -EINVAL;
                        }
                        a->opts.tenant = optarg;
                        break;
                case ARG_JSON:
                        a->opts.json = true;
                        break;
                case ARG_FILE: {
                        char **v = reallocarray(a->opts.files, a->n_files + 2, sizeof(char *));
                        if (!v)
                                return -ENOMEM;
                        v[a->n_files++] = optarg;
                        v[a->n_files] = NULL;
                        a->opts.files = v;
                        break;
                }
                case ARG_DIRECTORY:
                        a->opts.directory = optarg;
                        break;
                case ':':
                        fprintf(stderr, "%s: option '%s' needs a value; see --help\n", program_invocation_short_name,
                                argv[optind - 1]);
                        return -EINVAL;
                default:
                        fprintf(stderr, "%s: unknown option '%s'; see --help\n", program_invocation_short_name,
                                argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument '%s'; see --help\n", program_invocation_short_name,
                        argv[optind]);
                return -EINVAL;
        }
        int r = args_check_report(a);
        if (r < 0)
                return r;
        return 1;
}

static void warn_unknown_variables(void) {
        extern char **environ;
        config_warn_unknown(environ);
}

int main(int argc, char **argv) {
        _cleanup_(args_done) Args args = {};
        int r = parse_argv(argc, argv, &args);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        /* An operator's question about the journal: no configuration, no daemon. */
        if (args.report)
                return report_main(&args.opts);

        if (getenv("MCP_EXECD_DEBUG"))
                log_max_level = LOG_DEBUG;

        _cleanup_(config_done) Config cfg = {};
        _cleanup_free_ char *problem = NULL;
        r = config_load(getenv, &cfg, &problem);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", program_invocation_short_name, problem ? problem : strerror(-r));
                return 2;
        }
        warn_unknown_variables();
        if (cfg.transport != TRANSPORT_STDIO && http_check_exposure(&cfg) < 0)
                return 2;
        /* A configured source the installer cannot read is a configuration error, like a bad value. */
        if (pyexec_sources_check(&cfg) < 0)
                return 2;

        /* Freed before cfg, which it points to. */
        _cleanup_(daemon_freep) Daemon *d = NULL;
        r = daemon_new(&cfg, &d);
        if (r < 0)
                /* MCP_EXEC_PRELOAD naming a module that does not import: a bad value, as above. */
                return r == -ENOPKG ? 2 : 1;
        /* A loop that failed is logged and ends like a stop; the exit status stays 0, as it always was.
         * A start whose checks failed (the sandbox, the probe) exits 1, as it did when they ran
         * before anything was served; a preload that does not import, 2. */
        r = daemon_run(d);
        return r == -ENOPKG ? 2 : r == -ENOTRECOVERABLE ? 1 : 0;
}
