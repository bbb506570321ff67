/* vbench: the command line. `run` and `resume` are the coordinator; `status` and `show` read a results database;
 * `engines` lists the engine adapters this build has; `keys` makes CURVE key pairs for multi-host campaigns;
 * `dataset` fetches, lists and converts datasets (cli/cmd_dataset.c). */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/profile.h"
#include "coordinator/campaign.h"
#include "cli/cmd_dataset.h"
#include "cli/cmd_inventory.h"
#include "cli/cmd_report.h"
#include "store/lock.h"
#include "coordinator/preflight.h"
#include "report/show.h"
#include "store/store.h"
#include "engines/engine.h"
#include "proto/transport.h"
#include "util/versions.h"
#include "util/fs.h"

static const char *usage_main =
    "usage: vbench COMMAND [options]     (vbench COMMAND --help for each)\n"
    "\n"
    "A benchmark stand for vector search inside databases.\n"
    "\n"
    "commands:\n"
    "  run       run a campaign from a profile into a results database\n"
    "  resume    continue a campaign that was interrupted or killed\n"
    "  status    where a campaign stands: items done, running, failed\n"
    "  show      the result tables of a campaign (text or --json)\n"
    "  engines   the engines this build can drive\n"
    "  image     build an engine image (a Debian root file system for the servers): vbench image build NAME\n"
    "  keys      make a CURVE key pair for a coordinator or an agent on another host\n"
    "  inventory check a deployment inventory (deploy/install reads it)\n"
    "  dataset   the dataset registry: fetch a public dataset into the cache, list them, convert parquet\n"
    "\n"
    "example: vbench run --profile dev && vbench show\n";

static const char *usage_run =
    "usage: vbench run --profile NAME|FILE [--engines a,b] [--out FILE] [options]\n"
    "\n"
    "Runs every phase of the profile on every engine, committing each result as it arrives. Local mode: starts\n"
    "the coordinator here and a client agent as a separate process, talking over ZeroMQ (ipc://).\n"
    "\n"
    "  --profile NAME|FILE  a built-in profile (dev, smoke, tuned-complete) or a YAML file\n"
    "  --engines LIST       only these engines of the profile, comma-separated\n"
    "  --out FILE           results database (default results.db/PROFILE-YYYYmmdd-HHMMSS.sqlite)\n"
    "  --cpus LIST          CPUs for the client agent's worker threads, e.g. 1 or 64-79 (default: all)\n"
    "  --cache-dir DIR      dataset and ground-truth cache (default $VBENCH_CACHE or ~/.cache/vbench)\n"
    "  --mirror URL|DIR     fetch the profile's registry datasets (`registry: NAME`) missing from the cache from\n"
    "                       this mirror instead of their publishers (default $VBENCH_MIRROR); see `vbench dataset\n"
    "                       fetch --help`\n"
    "  --no-fetch           never download: a registry dataset missing from the cache is an error that names the\n"
    "                       command fetching it\n"
    "  --quiet              no progress and no tables; the exit code tells\n"
    "  --check              the preflight and the runtime estimate only: free disk for the dataset cache, the\n"
    "                       float32 copies, each server's data directory and the results; memory and CPUs\n"
    "                       against this host; recipes and images. Prints them and exits (0 ok, 1 a check\n"
    "                       failed), creating nothing. `run` makes the same checks before its first item.\n"
    "  --probe, --no-probe  calibrate first, or never: engines with no rates measured on this host near the\n"
    "                       campaign's dimension run a probe of 5,000 rows (FILE.probe.sqlite) whose rates the\n"
    "                       estimate then uses. By default only when the estimate from default rates is over\n"
    "                       10 minutes; --check says whether a run would probe\n"
    "  --notify CMD         run CMD (sh -c) when the campaign finishes, fails, expires a limit, is interrupted\n"
    "                       or loses an agent for notify.agent_lost_min (10) minutes: a one-paragraph summary\n"
    "                       on its stdin, VBENCH_EVENT in its environment, at most notify.timeout_s (60 s);\n"
    "                       its failure is an event, never the campaign's (default: the profile's notify.command)\n"
    "  --listen ENDPOINT    also accept agents from other hosts, e.g. tcp://0.0.0.0:5555 (CURVE required)\n"
    "  --cert FILE.key      the coordinator's key pair (`vbench keys coordinator`)\n"
    "  --allow DIR          directory of the agents' .pub files: only those agents are accepted, each under\n"
    "                       the id its key is named by; SIGHUP (systemctl reload vbench-coordinator) reads\n"
    "                       it again while the campaign runs\n"
    "  --no-local-agents    start no agent here: all of them connect from other hosts (with --listen)\n"
    "  --data-dir DIR       the local agents' working directory: the servers' data directories, the engines'\n"
    "                       files and the agents' outbox (default FILE.d beside the results); any file system,\n"
    "                       e.g. a large disk for the servers, the results on another. Kept in FILE: resume\n"
    "                       uses it again (or the --data-dir it is given)\n"
    "  --mode OCTAL         the results database's mode (default 0600; a directory it creates gets 0700, or\n"
    "                       x wherever OCTAL gives r); its -wal, -shm, .bak and .lock files take the same mode\n"
    "\n"
    "One coordinator per results database: a second `run` or `resume` of the same FILE is refused while the\n"
    "first one runs (exit 3). FILE.bak is a checked copy of FILE, written every limits.backup_every_s (600 s)\n"
    "and at the end.\n"
    "\n"
    "Engines with a `recipe:` in the profile need a server: a local orchestrator agent starts it as a systemd\n"
    "transient unit from the engine image, under the profile's resources budget (needs root and systemd):\n"
    "  --recipes DIR        engine recipes (default $VBENCH_RECIPES, BINDIR/../deploy/engines, /etc/vbench/engines)\n"
    "  --images DIR         engine images (default $VBENCH_IMAGES or /var/cache/vbench/images)\n"
    "  --bus ADDRESS        systemd's D-Bus address, e.g. unix:path=/run/systemd/private (default: local)\n"
    "\n"
    "exit code: 0 all items done, 1 some items failed, 2 interrupted (continue with `vbench resume`),\n"
    "           3 another coordinator is running this campaign\n";

static const char *usage_resume =
    "usage: vbench resume [--out FILE] [--retry-failed] [--data-dir DIR] [--cpus LIST] [--cache-dir DIR] [--quiet]\n"
    "                     [--recipes DIR] [--images DIR] [--bus ADDRESS]\n"
    "\n"
    "Continues the campaign in FILE (default: the newest results.db/*.sqlite) from its last committed item, with\n"
    "the profile stored in it. Items that were running when it stopped run again; results already recorded\n"
    "are kept and never recorded twice.\n"
    "\n"
    "  --retry-failed       also run failed and skipped items again\n"
    "  --data-dir DIR       as for `vbench run` (default: the one the campaign was run with)\n"
    "  --mirror, --no-fetch as for `vbench run`\n"
    "  --notify CMD         as for `vbench run`\n"
    "  --listen, --cert, --allow, --no-local-agents   as for `vbench run`: agents on other hosts, which\n"
    "                       reattach by themselves and resend what the killed coordinator did not acknowledge\n";

static const char *usage_status =
    "usage: vbench status [--watch SECONDS] [--out FILE | FILE]\n"
    "\n"
    "Prints the campaign's state: status, items per state, the running item, failures, the last events, and\n"
    "whether a coordinator is running it (its PID, host and start), from the lock beside FILE; elapsed time,\n"
    "time since the last result, the ETA (the runtime estimate of what is left, scaled by how the items done so\n"
    "far compared with theirs) and the running item's progress; at the end, the estimate against the truth.\n"
    "--watch SECONDS prints it again every SECONDS until no coordinator runs the campaign.\n"
    "Reads FILE without writing it; refuses a file that is not a vbench results database, or a damaged one\n"
    "(exit 2). Default FILE: the newest results.db/*.sqlite.\n";

static const char *usage_show =
    "usage: vbench show [--json] [--windows] [--wide] [--recall] [--worst N] [--out FILE | FILE]\n"
    "\n"
    "Prints the result tables (build, recall_sweep, recall_targets, failures). --json prints the same tables\n"
    "as one JSON object with an array per table. A repeated point is one row: the median over its repeats, the\n"
    "range (qps_min, qps_max) and from 5 repeats the bootstrap 95 % interval of the median QPS (qps_ci_lo,\n"
    "qps_ci_hi). --windows adds every concurrency window, one row per repeat (table concurrency_windows).\n"
    "The tables fit 120 columns: a column with nothing to say for this campaign (no value in any row, a range\n"
    "or interval equal to its median, errors 0 everywhere, one repeat) is named under its table instead, a value\n"
    "every row shares (dataset, clients, ...) goes into the title, and long texts are cut with \"...\". --wide\n"
    "shows every column as it is; --json is never cut.\n"
    "--recall adds the distribution of per-query recall of every measured point: min, p1, p10, p50 (nearest\n"
    "rank), the shares of queries at recall 0 and below 0.5 (table recall_distribution; --json always has it).\n"
    "--worst N adds the N hardest queries of every measured point, by query index with their recall, and says\n"
    "which points kept no per-query answers (table worst_queries).\n"
    "Reads FILE without writing it; refuses a file that is not a\n"
    "vbench results database, or a damaged one (exit 2). Default FILE: the newest results.db/*.sqlite.\n";

static const char *usage_image =
    "usage: vbench image build NAME | vbench image path NAME\n"
    "\n"
    "build: makes the engine image NAME (deploy/images/NAME.list) with debootstrap, a Debian root file system the\n"
    "orchestrator runs servers from, cached in $VBENCH_IMAGES (default /var/cache/vbench/images) under a key\n"
    "made from the recipe's content: a second build of an unchanged recipe does nothing. Needs root (and\n"
    "installs debootstrap with apt-get when it is missing); about 3 minutes and 1 GB for db-trixie (MariaDB\n"
    "11.8, PostgreSQL 17 + pgvector 0.8).\n"
    "path: prints where the image is; exit 1 when it is not built.\n"
    "A server's data directory is a copy of a template its recipe's init (initdb, mariadb-install-db) made once\n"
    "per image and recipe, kept in $VBENCH_TEMPLATES (default /var/cache/vbench/templates; off: the init runs for\n"
    "every campaign); docs/engines.md \"Data templates\".\n";

static const char *usage_engines = "usage: vbench engines\n\nLists the engine adapters in this build.\n";

static const char *usage_keys =
    "usage: vbench keys NAME [--dir DIR] [--force]\n"
    "\n"
    "Makes a CURVE key pair for a coordinator or an agent that talk over TCP\n"
    "(docs/deployment.md: Multi-host security). DIR/NAME.key holds both keys (mode 0600): it stays on this\n"
    "host. DIR/NAME.pub holds the public key: an agent's goes into the coordinator's --allow directory, the\n"
    "coordinator's is every agent's --server-key.\n"
    "\n"
    "  --dir DIR            where to write the two files (default: the current directory; created mode 0700)\n"
    "  --force              replace an existing pair (whoever trusted the old public key is locked out)\n"
    "\n"
    "example: vbench keys coordinator --dir /etc/vbench/keys\n";

static void agent_path(char *out, size_t len) {
    const char *env = getenv("VBENCH_AGENT");
    if (env) {
        snprintf(out, len, "%s", env);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) {
        snprintf(out, len, "vbench-agent");
        return;
    }
    self[n] = '\0';
    snprintf(out, len, "%s/vbench-agent", dirname(self));
}

static void join_args(int argc, char **argv, char *out, size_t len) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < argc && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", i ? " " : "", argv[i]);
}

enum { OPT_PROFILE = 256, OPT_ENGINES, OPT_OUT, OPT_CPUS, OPT_CACHE, OPT_QUIET, OPT_RETRY, OPT_JSON, OPT_WINDOWS, OPT_WIDE, OPT_RECIPES,
       OPT_IMAGES, OPT_BUS, OPT_DIR, OPT_FORCE, OPT_LISTEN, OPT_CERT, OPT_ALLOW, OPT_NO_LOCAL, OPT_MODE,
       OPT_CHECK, OPT_NOTIFY, OPT_MIRROR, OPT_NO_FETCH, OPT_DATA_DIR, OPT_PROBE, OPT_NO_PROBE, OPT_RECALL, OPT_WORST };

static int cmd_run(int argc, char **argv, int resume) {
    static const struct option opts[] = {
        {"profile", required_argument, 0, OPT_PROFILE}, {"engines", required_argument, 0, OPT_ENGINES},
        {"out", required_argument, 0, OPT_OUT},         {"cpus", required_argument, 0, OPT_CPUS},
        {"cache-dir", required_argument, 0, OPT_CACHE}, {"quiet", no_argument, 0, OPT_QUIET},
        {"retry-failed", no_argument, 0, OPT_RETRY},    {"help", no_argument, 0, 'h'},
        {"recipes", required_argument, 0, OPT_RECIPES}, {"images", required_argument, 0, OPT_IMAGES},
        {"bus", required_argument, 0, OPT_BUS},         {"listen", required_argument, 0, OPT_LISTEN},
        {"cert", required_argument, 0, OPT_CERT},       {"allow", required_argument, 0, OPT_ALLOW},
        {"no-local-agents", no_argument, 0, OPT_NO_LOCAL}, {"mode", required_argument, 0, OPT_MODE},
        {"check", no_argument, 0, OPT_CHECK}, {"notify", required_argument, 0, OPT_NOTIFY},
        {"mirror", required_argument, 0, OPT_MIRROR}, {"no-fetch", no_argument, 0, OPT_NO_FETCH},
        {"probe", no_argument, 0, OPT_PROBE}, {"no-probe", no_argument, 0, OPT_NO_PROBE},
        {"data-dir", required_argument, 0, OPT_DATA_DIR}, {0, 0, 0, 0}};
    vb_campaign_opts o = {.resume = resume};
    char out[PATH_MAX] = "", agent[PATH_MAX], cmdline[4096];
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_PROFILE: o.profile = optarg; break;
        case OPT_ENGINES: o.engines = optarg; break;
        case OPT_OUT: snprintf(out, sizeof out, "%s", optarg); break;
        case OPT_CPUS: o.agent_cpus = optarg; break;
        case OPT_CACHE: o.cache_dir = optarg; break;
        case OPT_QUIET: o.quiet = 1; break;
        case OPT_RETRY: o.retry_failed = 1; break;
        case OPT_RECIPES: o.recipes_dir = optarg; break;
        case OPT_IMAGES: o.images_dir = optarg; break;
        case OPT_BUS: o.bus_address = optarg; break;
        case OPT_LISTEN: o.listen = optarg; break;
        case OPT_CERT: o.cert = optarg; break;
        case OPT_ALLOW: o.allow_dir = optarg; break;
        case OPT_NO_LOCAL: o.no_local_agents = 1; break;
        case OPT_CHECK: o.check_only = 1; break;
        case OPT_NOTIFY: o.notify = optarg; break;
        case OPT_MIRROR: o.mirror = optarg; break;
        case OPT_NO_FETCH: o.no_fetch = 1; break;
        case OPT_PROBE: o.probe_mode = 1; break;
        case OPT_NO_PROBE: o.probe_mode = 2; break;
        case OPT_DATA_DIR: o.data_dir = optarg; break;
        case OPT_MODE: {
            char *end = NULL;
            long m = strtol(optarg, &end, 8);
            if (resume || !*optarg || *end || m < 0 || m > 0777 || (m & 0600) != 0600) {
                fprintf(stderr, "vbench: %s\n", resume ? "--mode goes with `vbench run` (resume keeps the file's mode)"
                                                        : "--mode takes an octal mode that lets the owner read and "
                                                          "write, e.g. 0600 or 0640");
                return 2;
            }
            o.mode = (unsigned)m;
            break;
        }
        case 'h': fputs(resume ? usage_resume : usage_run, stdout); return 0;
        default: fputs(resume ? usage_resume : usage_run, stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "vbench: unexpected argument \"%s\" (see --help)\n", argv[optind]);
        return 2;
    }
    if ((!resume && (o.retry_failed)) || (resume && (o.profile || o.engines))) {
        fprintf(stderr, "vbench: %s\n", resume ? "resume takes the profile and engines stored in the campaign; "
                                                 "start a new campaign with `vbench run` to change them"
                                               : "--retry-failed goes with `vbench resume`");
        return 2;
    }
    if (!resume && !o.profile) {
        fprintf(stderr, "vbench: run needs --profile NAME|FILE; built-in profiles:");
        for (const char *const *n = vb_profile_builtin_names(); *n; n++) fprintf(stderr, " %s", *n);
        fputc('\n', stderr);
        return 2;
    }
    if (!out[0]) {
        if (resume) {
            if (vb_newest_file("results.db", ".sqlite", out, sizeof out) != 0) {
                fprintf(stderr, "vbench: no results.db/*.sqlite here; name the campaign with --out FILE\n");
                return 2;
            }
        } else {
            char base[256], stamp[32];
            snprintf(base, sizeof base, "%s", o.profile);
            char *b = basename(base);
            char *dot = strrchr(b, '.');
            if (dot && (strcmp(dot, ".yml") == 0 || strcmp(dot, ".yaml") == 0)) *dot = '\0';
            time_t now = time(NULL);
            struct tm tm;
            localtime_r(&now, &tm);
            strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
            snprintf(out, sizeof out, "results.db/%s-%s.sqlite", b, stamp);
        }
    }
    agent_path(agent, sizeof agent);
    join_args(argc + 1, argv - 1, cmdline, sizeof cmdline);
    o.out = out;
    o.agent_bin = agent;
    o.command_line = cmdline;
    if (o.check_only && !resume) return vb_preflight_check_command(&o);
    vb_error err;
    vb_error_clear(&err);
    int code = vb_campaign_run(&o, &err);
    if (code < 0) {
        fprintf(stderr, "vbench: %s\n", err.message);
        /* 3: the database is another coordinator's; the systemd unit does not retry that (RestartPreventExitStatus) */
        return strcmp(err.domain, "lock") == 0 && err.code == EAGAIN ? 3 : 2;
    }
    return code;
}

/* show: show's flags (NULL: refused, as for status). */
static int open_for_reading(int argc, char **argv, const char *usage, vb_show_opts *show, vb_store **store,
                            sqlite3 **db, char *path_out, size_t path_len) {
    static const struct option opts[] = {{"out", required_argument, 0, OPT_OUT}, {"json", no_argument, 0, OPT_JSON},
                                         {"windows", no_argument, 0, OPT_WINDOWS}, {"wide", no_argument, 0, OPT_WIDE},
                                         {"recall", no_argument, 0, OPT_RECALL}, {"worst", required_argument, 0, OPT_WORST},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    char path[PATH_MAX] = "";
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_OUT: snprintf(path, sizeof path, "%s", optarg); break;
        case OPT_JSON:
        case OPT_WINDOWS:
        case OPT_WIDE:
        case OPT_RECALL:
        case OPT_WORST:
            if (!show) {
                fputs(usage, stderr);
                return 2;
            }
            if (c == OPT_JSON) show->json = 1;
            else if (c == OPT_WINDOWS) show->windows = 1;
            else if (c == OPT_WIDE) show->wide = 1;
            else if (c == OPT_RECALL) show->recall = 1;
            else {
                char *end = NULL;
                long n = strtol(optarg, &end, 10);
                if (!*optarg || *end || n < 1 || n > 100000) {
                    fprintf(stderr, "vbench: --worst takes a number of queries (1 to 100000), not \"%s\"\n", optarg);
                    return 2;
                }
                show->worst = n;
            }
            break;
        case 'h': fputs(usage, stdout); return -1;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind < argc) snprintf(path, sizeof path, "%s", argv[optind]);
    if (!path[0] && vb_newest_file("results.db", ".sqlite", path, sizeof path) != 0) {
        fprintf(stderr, "vbench: no results.db/*.sqlite here; name one with --out FILE\n");
        return 2;
    }
    /* Read-only: status and show never write the file, whatever it is (store.h: VB_STORE_READ). */
    vb_error err;
    vb_store_opts so = {.access = VB_STORE_READ};
    if (vb_store_open_with(path, &so, store, &err) != VB_OK) {
        fprintf(stderr, "vbench: %s\n", err.message);
        return 2;
    }
    *db = vb_store_db(*store);
    snprintf(path_out, path_len, "%s", path);
    return 0;
}

static int cmd_show(int argc, char **argv, int status);

/* status --watch N: the status again every N seconds, until no coordinator holds the campaign. */
static int cmd_status(int argc, char **argv) {
    double every = 0;
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--watch") == 0 && i + 1 < argc) {
            char *end = NULL;
            every = strtod(argv[++i], &end);
            if (!*argv[i] || *end || every < 0.1) {
                fprintf(stderr, "vbench: --watch takes a number of seconds (at least 0.1), not \"%s\"\n", argv[i]);
                return 2;
            }
            continue;
        }
        argv[n++] = argv[i];
    }
    argv[n] = NULL;
    if (every <= 0) return cmd_show(n, argv, 1);
    char path[PATH_MAX] = "";
    for (int i = 1; i < n; i++)
        if (argv[i][0] != '-' && strcmp(argv[i - 1], "--out") != 0) snprintf(path, sizeof path, "%s", argv[i]);
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < n) snprintf(path, sizeof path, "%s", argv[i + 1]);
    for (;;) {
        /* The lock is probed before the status is read: the coordinator writes its last words (the estimate
         * against the truth, the final status) before it lets the lock go, so the status printed after a probe
         * that found no holder is complete, and it is the last one. */
        if (!path[0] && vb_newest_file("results.db", ".sqlite", path, sizeof path) != 0) return 2;
        vb_lock_holder holder;
        vb_lock_probe(path, &holder);
        if (isatty(1)) fputs("\033[H\033[2J", stdout);
        optind = 0;   /* getopt again over the same arguments */
        int rc = cmd_show(n, argv, 1);
        fflush(stdout);
        if (rc || !holder.held) return rc;
        usleep((useconds_t)(every * 1e6));
    }
}

static int cmd_show(int argc, char **argv, int status) {
    vb_show_opts show = {0};
    sqlite3 *db = NULL;
    vb_store *store = NULL;
    char path[PATH_MAX];
    int rc = open_for_reading(argc, argv, status ? usage_status : usage_show, status ? NULL : &show, &store, &db,
                              path, sizeof path);
    if (rc) return rc < 0 ? 0 : rc;
    vb_error err;
    vb_lock_holder holder;
    if (status) vb_lock_probe(path, &holder);
    rc = status ? vb_report_status(db, path, &holder, stdout, &err) : vb_report_show_opts(db, stdout, &show, &err);
    vb_store_close(&store);
    if (rc) {
        fprintf(stderr, "vbench: %s\n", err.message);
        return 2;
    }
    return 0;
}

static int cmd_engines(int argc, char **argv) {
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage_engines, stdout);
        return 0;
    }
    const char *names[64];
    size_t n = vb_engine_list(names, 64);
    printf("%-12s %-10s %s\n", "engine", "kind", "description");
    for (size_t i = 0; i < n && i < 64; i++) {
        const vb_engine_ops *ops = vb_engine_find(names[i]);
        printf("%-12s %-10s %s\n", names[i], ops->flags & VB_ENGINE_EMBEDDED ? "embedded" : "server",
               ops->description ? ops->description : "");
    }
    return 0;
}

/* deploy/image-build does the work (debootstrap in a private mount namespace, atomic rename into the cache);
 * this finds it beside the binary (source tree) or where deploy/install puts it. */
static int cmd_image(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_image, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if ((strcmp(argv[1], "build") != 0 && strcmp(argv[1], "path") != 0) || argc != 3) {
        fprintf(stderr, "vbench image: expected `build NAME` or `path NAME`\n\n%s", usage_image);
        return 2;
    }
    char exe[PATH_MAX], script[PATH_MAX + 64] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *env = getenv("VBENCH_IMAGE_BUILD");
    if (env && *env) snprintf(script, sizeof script, "%s", env);
    if (!script[0] && n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        snprintf(script, sizeof script, "%s/../deploy/image-build", exe);
        if (access(script, X_OK) != 0 && access(script, R_OK) != 0) script[0] = '\0';
    }
    if (!script[0]) snprintf(script, sizeof script, "/usr/local/share/vbench/image-build");
    if (access(script, R_OK) != 0) {
        fprintf(stderr, "vbench image: cannot find deploy/image-build (looked beside this binary and at %s); set "
                        "VBENCH_IMAGE_BUILD to its path\n", script);
        return 1;
    }
    const char *cache = getenv("VBENCH_IMAGES");
    const char *args[8];
    int k = 0;
    args[k++] = "bash";
    args[k++] = script;
    if (cache && *cache) args[k++] = "--cache", args[k++] = cache;
    if (strcmp(argv[1], "path") == 0) args[k++] = "--path-only";
    args[k++] = argv[2];
    args[k] = NULL;
    if (strcmp(argv[1], "build") == 0)
        fprintf(stderr, "vbench image: building %s with %s (a few minutes the first time; cached afterwards)\n",
                argv[2], script);
    execvp("bash", (char *const *)args);
    fprintf(stderr, "vbench image: cannot run bash: %s\n", strerror(errno));
    return 1;
}

static int cmd_keys(int argc, char **argv) {
    static const struct option opts[] = {{"dir", required_argument, 0, OPT_DIR}, {"force", no_argument, 0, OPT_FORCE},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *dir = ".";
    int force = 0, c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DIR: dir = optarg; break;
        case OPT_FORCE: force = 1; break;
        case 'h': fputs(usage_keys, stdout); return 0;
        default: fputs(usage_keys, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "vbench: keys needs one NAME, e.g. `vbench keys coordinator` or `vbench keys agent-bench1` "
                        "(see --help)\n");
        return 2;
    }
    const char *name = argv[optind];
    char public_key[VB_TRANSPORT_KEY_LEN + 1];
    vb_error err;
    vb_error_clear(&err);
    if (vb_transport_keys_make(dir, name, force, public_key, &err) != VB_OK) {
        fprintf(stderr, "vbench: %s\n", err.message);
        return 1;
    }
    printf("wrote %s/%s.key (secret: mode 0600, keep it on this host)\n", dir, name);
    printf("wrote %s/%s.pub (public: copy it to the other side)\n", dir, name);
    printf("public key: %s\n", public_key);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        fputs(usage_main, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("vbench %s\n", vb_git_revision());
        return 0;
    }
    const char *cmd = argv[1];
    argc--;
    argv++;
    if (strcmp(cmd, "run") == 0) return cmd_run(argc, argv, 0);
    if (strcmp(cmd, "resume") == 0) return cmd_run(argc, argv, 1);
    if (strcmp(cmd, "status") == 0) return cmd_status(argc, argv);
    if (strcmp(cmd, "show") == 0) return cmd_show(argc, argv, 0);
    if (strcmp(cmd, "report") == 0) return vb_cmd_report(argc, argv);
    if (strcmp(cmd, "export") == 0) return vb_cmd_export(argc, argv);
    if (strcmp(cmd, "engines") == 0) return cmd_engines(argc, argv);
    if (strcmp(cmd, "image") == 0) return cmd_image(argc, argv);
    if (strcmp(cmd, "keys") == 0) return cmd_keys(argc, argv);
    if (strcmp(cmd, "inventory") == 0) return vb_cmd_inventory(argc, argv);
    if (strcmp(cmd, "dataset") == 0) return vb_cmd_dataset(argc, argv);
    fprintf(stderr, "vbench: unknown command \"%s\"\n\n%s", cmd, usage_main);
    return 2;
}
