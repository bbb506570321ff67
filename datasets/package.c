/* Debian dataset packages (datasets/package.h): dpkg-query, apt-cache and apt-get run as child processes. */
#include "datasets/package.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void vb_package_file_path(const vb_registry_package *p, size_t i, char *buf, size_t len) {
    snprintf(buf, len, "%s/%s", p->dir, p->files[i].file);
}

int vb_package_here(const vb_registry_package *p) {
    size_t n = vb_registry_package_n_files(p);
    for (size_t i = 0; i < n; i++) {
        char f[1024];
        struct stat st;
        vb_package_file_path(p, i, f, sizeof f);
        if (stat(f, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    }
    return n > 0;
}

/* Runs argv with stdin from /dev/null and stdout into buf (NUL-terminated, cut at len), stderr to /dev/null unless
 * `out_fd` >= 0 (then stdout and stderr both go there and buf stays empty). Its exit status, or -1. */
static int run_capture(char *const argv[], char *buf, size_t len, int out_fd) {
    int pfd[2] = {-1, -1};
    if (buf && len) buf[0] = '\0';
    if (out_fd < 0 && pipe(pfd) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        if (pfd[0] >= 0) close(pfd[0]), close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) dup2(null, 0);
        if (out_fd >= 0) {
            dup2(out_fd, 1);
            dup2(out_fd, 2);
        } else {
            dup2(pfd[1], 1);
            if (null >= 0) dup2(null, 2);
            close(pfd[0]);
        }
        setenv("DEBIAN_FRONTEND", "noninteractive", 1);
        setenv("LC_ALL", "C", 1);
        execvp(argv[0], argv);
        _exit(127);
    }
    size_t used = 0;
    if (out_fd < 0) {
        close(pfd[1]);
        char tmp[4096];
        for (;;) {
            ssize_t r = read(pfd[0], tmp, sizeof tmp);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            size_t take = buf && used + 1 < len ? (len - 1 - used < (size_t)r ? len - 1 - used : (size_t)r) : 0;
            if (take) memcpy(buf + used, tmp, take), used += take;
        }
        close(pfd[0]);
        if (buf && len) buf[used] = '\0';
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int vb_package_version(const vb_registry_package *p, char *buf, size_t len) {
    char *argv[] = {"dpkg-query", "-W", "-f=${Status}|${Version}", (char *)p->name, NULL};
    char out[512];
    buf[0] = '\0';
    if (run_capture(argv, out, sizeof out, -1) != 0 || !strstr(out, "install ok installed|")) return -1;
    snprintf(buf, len, "%s", strchr(out, '|') + 1);
    buf[strcspn(buf, "\n")] = '\0';
    return buf[0] ? 0 : -1;
}

int vb_package_installable(const vb_registry_package *p) {
    char *argv[] = {"apt-cache", "policy", (char *)p->name, NULL};
    char out[8192];
    if (run_capture(argv, out, sizeof out, -1) != 0) return 0;
    const char *c = strstr(out, "Candidate:");
    if (!c) return 0;
    c += strlen("Candidate:");
    while (*c == ' ') c++;
    return *c && *c != '\n' && strncmp(c, "(none)", 6) != 0;
}

void vb_package_install_command(const vb_registry_package *p, char *buf, size_t len) {
    snprintf(buf, len, "apt-get install -y %s", p->name);
}

int vb_package_install(const vb_registry_package *p, FILE *say, vb_error *err) {
    char cmd[256];
    vb_package_install_command(p, cmd, sizeof cmd);
    if (geteuid() != 0)
        return vb_error_set(err, "dataset", 1, "%s is not installed and this is not root: run `%s` as root (or "
                            "with sudo)", p->name, cmd);
    if (!say) say = stderr;
    fprintf(say, "installing Debian's %s: %s\n", p->name, cmd);
    fflush(say);
    /* another apt holding dpkg's lock (an unattended upgrade, a second install) is waited for, up to two minutes */
    char *argv[] = {"apt-get", "-o", "DPkg::Lock::Timeout=120", "install", "-y", "--no-install-recommends",
                    (char *)p->name, NULL};
    int rc = run_capture(argv, NULL, 0, fileno(say));
    if (rc != 0 || !vb_package_here(p))
        return vb_error_set(err, "dataset", 1, "`%s` %s%s: see apt's message above (apt-get update may be needed, "
                            "or the package is not in this host's Debian suites: apt-cache policy %s)", cmd,
                            rc == 127 ? "could not start (no apt-get here)" : rc != 0 ? "failed" : "ran",
                            rc == 0 ? " but the package's files are not in place" : "", p->name);
    return VB_OK;
}
