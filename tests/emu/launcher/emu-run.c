/* emu-run: starts N rank processes of a program on the CPU emulator, the way torchrun starts
 * ranks on a GPU node.
 *
 *   emu-run -n N [--timeout SECONDS] -- PROGRAM ARGS...
 *
 * Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, USBYTE_EMU_JOB (the same on
 * every rank: the emulated ncclGetUniqueId derives its ids from it), USBYTE_EMU_LAUNCHED=1 and
 * LD_LIBRARY_PATH with the emulator's directory (the one holding emu-run) first; LD_PRELOAD
 * passes through.  Output is forwarded line by line as "[rank R] ...".  When a rank fails, all
 * ranks are killed and emu-run exits with that rank's status (128+signal for a signal).  On
 * timeout every rank gets SIGUSR2 (the emulated libcudart then prints what each stream is
 * doing), then everything is killed and emu-run exits 124. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 128
#define DEFAULT_TIMEOUT_S 120.0
#define KILL_GRACE_MS 2000      /* SIGTERM, then SIGKILL after this */
#define DUMP_WAIT_MS 1500       /* how long the SIGUSR2 dumps may take at most */
#define DUMP_QUIET_MS 200       /* ... ending early once every rank has been quiet this long */

struct stream_buf {
    int fd;            /* -1 when closed */
    char *data;
    size_t len, cap;
};

struct rank {
    pid_t pid;
    int alive;
    struct stream_buf out[2];   /* stdout, stderr */
    long long last_output_ms;
};

static struct rank ranks[MAX_RANKS];
static int nranks;
static pid_t group;             /* process group of all ranks */
static char job[64];
static volatile sig_atomic_t stop_signal;
static int stopping;            /* ranks are being stopped by us: their deaths are not news */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void usage(void)
{
    fprintf(stderr, "usage: emu-run -n N [--timeout SECONDS] -- PROGRAM ARGS...\n");
    exit(2);
}

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* ---- output forwarding ---- */

static void emit(int which, int r, const char *line, size_t len)
{
    FILE *f = which == 0 ? stdout : stderr;
    fprintf(f, "[rank %d] %.*s\n", r, (int)len, line);
    fflush(f);
}

/* Reads what is available on one pipe and forwards every complete line. */
static void drain(int r, int which)
{
    struct stream_buf *b = &ranks[r].out[which];
    char tmp[4096];
    ssize_t n = read(b->fd, tmp, sizeof tmp);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        if (b->len > 0)
            emit(which, r, b->data, b->len);   /* last line without newline */
        b->len = 0;
        close(b->fd);
        b->fd = -1;
        return;
    }
    ranks[r].last_output_ms = now_ms();
    if (b->len + (size_t)n > b->cap) {
        size_t cap = (b->len + (size_t)n) * 2;
        char *p = realloc(b->data, cap);
        if (p == NULL) {
            perror("emu-run: realloc");
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, tmp, (size_t)n);
    b->len += (size_t)n;
    size_t start = 0;
    for (size_t i = 0; i < b->len; i++) {
        if (b->data[i] == '\n') {
            emit(which, r, b->data + start, i - start);
            start = i + 1;
        }
    }
    memmove(b->data, b->data + start, b->len - start);
    b->len -= start;
}

/* Waits up to timeout_ms for output and forwards it.  Returns the number of open pipes. */
static int pump(int timeout_ms)
{
    struct pollfd fds[MAX_RANKS * 2];
    int who[MAX_RANKS * 2], n = 0;
    for (int r = 0; r < nranks; r++)
        for (int w = 0; w < 2; w++)
            if (ranks[r].out[w].fd >= 0) {
                fds[n] = (struct pollfd){.fd = ranks[r].out[w].fd, .events = POLLIN};
                who[n++] = r * 2 + w;
            }
    if (n == 0) {
        if (timeout_ms > 0)
            poll(NULL, 0, timeout_ms);
        return 0;
    }
    if (poll(fds, (nfds_t)n, timeout_ms) > 0)
        for (int i = 0; i < n; i++)
            if (fds[i].revents)
                drain(who[i] / 2, who[i] % 2);
    int open = 0;
    for (int r = 0; r < nranks; r++)
        open += (ranks[r].out[0].fd >= 0) + (ranks[r].out[1].fd >= 0);
    return open;
}

/* ---- processes ---- */

static int status_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

/* Reaps exited ranks; returns the status of the first failure seen in this call, or -1. */
static int reap(void)
{
    int first = -1;
    for (int r = 0; r < nranks; r++) {
        if (!ranks[r].alive)
            continue;
        int status;
        pid_t p = waitpid(ranks[r].pid, &status, WNOHANG);
        if (p != ranks[r].pid)
            continue;
        ranks[r].alive = 0;
        int code = status_code(status);
        if (code != 0 && first < 0 && !stopping) {
            first = code;
            stopping = 1;
            if (WIFSIGNALED(status))
                fprintf(stderr, "emu-run: rank %d killed by signal %d (%s)\n", r, WTERMSIG(status), strsignal(WTERMSIG(status)));
            else
                fprintf(stderr, "emu-run: rank %d exited with status %d\n", r, code);
        }
    }
    return first;
}

static int alive_count(void)
{
    int n = 0;
    for (int r = 0; r < nranks; r++)
        n += ranks[r].alive;
    return n;
}

/* SIGTERM to the group, SIGKILL after a grace period; forwards output meanwhile. */
static void kill_all(void)
{
    if (alive_count() == 0)
        return;
    kill(-group, SIGTERM);
    long long deadline = now_ms() + KILL_GRACE_MS;
    while (alive_count() > 0 && now_ms() < deadline) {
        pump(20);
        reap();
    }
    if (alive_count() > 0) {
        kill(-group, SIGKILL);
        while (alive_count() > 0) {
            pump(20);
            reap();
        }
    }
}

/* Removes the shared-memory segments the emulated NCCL left for this job (a rank that died
 * never detaches). */
static void remove_job_segments(void)
{
    char prefix[96];
    snprintf(prefix, sizeof prefix, "usbyte-emu-%s-", job);
    DIR *d = opendir("/dev/shm");
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            char name[300];
            snprintf(name, sizeof name, "/%s", e->d_name);
            shm_unlink(name);
        }
    }
    closedir(d);
}

static char *emulator_dir(void)
{
    static char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0)
        return NULL;
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        return NULL;
    *slash = '\0';
    return dir;
}

static void set_int_env(const char *name, int v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d", v);
    setenv(name, buf, 1);
}

static void start_rank(int r, char **argv)
{
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        perror("emu-run: pipe");
        kill_all();
        exit(1);
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("emu-run: fork");
        kill_all();
        exit(1);
    }
    if (pid == 0) {
        setpgid(0, r == 0 ? 0 : group);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        set_int_env("RANK", r);
        set_int_env("LOCAL_RANK", r);
        set_int_env("WORLD_SIZE", nranks);
        set_int_env("LOCAL_WORLD_SIZE", nranks);
        execvp(argv[0], argv);
        fprintf(stderr, "emu-run: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (r == 0)
        group = pid;
    setpgid(pid, group);   /* also from here: no race with the child's own call */
    close(out[1]);
    close(err[1]);
    ranks[r] = (struct rank){.pid = pid, .alive = 1, .out = {{.fd = out[0]}, {.fd = err[0]}}};
}

/* Strict positive number. */
static int parse_number(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    double n = 0, timeout = DEFAULT_TIMEOUT_S;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            if (parse_number(argv[++i], 1, MAX_RANKS, &n) != 0 || n != (int)n) {
                fprintf(stderr, "emu-run: -n '%s': expected a whole number of ranks in [1, %d]\n", argv[i], MAX_RANKS);
                return 2;
            }
        } else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            if (parse_number(argv[++i], 0.001, 1e7, &timeout) != 0) {
                fprintf(stderr, "emu-run: --timeout '%s': expected a number of seconds > 0\n", argv[i]);
                return 2;
            }
        } else {
            usage();
        }
    }
    if (n < 1 || i >= argc)
        usage();
    nranks = (int)n;

    snprintf(job, sizeof job, "%ld-%lld", (long)getpid(), now_ms());
    setenv("USBYTE_EMU_JOB", job, 1);
    setenv("USBYTE_EMU_LAUNCHED", "1", 1);
    const char *dir = emulator_dir();
    if (dir != NULL) {
        const char *old = getenv("LD_LIBRARY_PATH");
        size_t len = strlen(dir) + (old ? strlen(old) : 0) + 2;
        char *path = malloc(len);
        if (path != NULL) {
            snprintf(path, len, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
            setenv("LD_LIBRARY_PATH", path, 1);
            free(path);
        }
    }

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    for (int r = 0; r < nranks; r++)
        start_rank(r, argv + i);

    long long deadline = now_ms() + (long long)(timeout * 1000.0);
    int result = 0;
    for (;;) {
        int open = pump(50);
        int failed = reap();
        if (failed >= 0) {
            result = failed;
            kill_all();
            break;
        }
        if (alive_count() == 0)
            break;
        if (stop_signal) {
            fprintf(stderr, "emu-run: %s, stopping the ranks\n", strsignal(stop_signal));
            result = 128 + stop_signal;
            stopping = 1;
            kill_all();
            break;
        }
        if (now_ms() >= deadline) {
            stopping = 1;
            kill(-group, SIGUSR2);
            long long signalled = now_ms(), until = signalled + DUMP_WAIT_MS;
            for (int r = 0; r < nranks; r++)
                ranks[r].last_output_ms = 0;
            while (now_ms() < until && alive_count() > 0) {
                pump(20);
                reap();
                int settled = 1;
                for (int r = 0; r < nranks; r++)
                    settled &= !ranks[r].alive || (ranks[r].last_output_ms >= signalled &&
                                                   now_ms() - ranks[r].last_output_ms >= DUMP_QUIET_MS);
                if (settled)
                    break;
            }
            fprintf(stderr, "emu-run: timeout after %g s\n", timeout);
            kill_all();
            result = 124;
            break;
        }
        (void)open;
    }
    /* What the ranks wrote just before exiting; bounded, since a descendant that left the
     * process group could hold a pipe open. */
    long long until = now_ms() + 1000;
    while (now_ms() < until && pump(50) > 0)
        ;
    remove_job_segments();
    for (int r = 0; r < nranks; r++)
        for (int w = 0; w < 2; w++) {
            if (ranks[r].out[w].fd >= 0)
                close(ranks[r].out[w].fd);
            free(ranks[r].out[w].data);
        }
    return result;
}
