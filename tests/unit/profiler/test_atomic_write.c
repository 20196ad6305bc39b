/* ub_write_file_atomic: a new or regular target is replaced whole; a symbolic link, a directory,
 * a FIFO or a device at the target is refused and left as it was; a symbolic link planted at the
 * temporary's name is never followed; several processes writing one path leave one whole file
 * at every moment; nothing is left behind; ub_write_json_atomic writes a document by the same
 * rules. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "usbyte/atomic_write.h"

/* The writer takes its random part from getrandom; this definition in the executable is the one
 * its object (linked in statically) calls, so a test can predict the temporary's name and plant
 * a link there.  Without a script it is the kernel's. */
static const uint64_t *fake_random;
static size_t fake_random_n, fake_random_next;

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    if (fake_random == NULL)
        return syscall(SYS_getrandom, buf, len, flags);
    uint64_t v = fake_random[fake_random_next < fake_random_n ? fake_random_next : fake_random_n - 1];
    fake_random_next++;
    memset(buf, 0, len);
    memcpy(buf, &v, len < sizeof v ? len : sizeof v);
    return (ssize_t)len;
}

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/usbyte-atomic-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void path_in(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The whole file, NUL-terminated, in buf; its length, or -1. */
static long read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = '\0';
    return (long)n;
}

/* Names in the test directory other than those listed (leftover temporaries). */
static int extra_entries(const char *const *expected, size_t n_expected, char *first, size_t len)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int extra = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        bool known = false;
        for (size_t i = 0; i < n_expected; i++)
            known = known || strcmp(e->d_name, expected[i]) == 0;
        if (!known && extra++ == 0)
            snprintf(first, len, "%s", e->d_name);
    }
    closedir(d);
    return extra;
}

#define ASSERT_ONLY(...)                                                                        \
    do {                                                                                        \
        const char *const names_[] = {__VA_ARGS__};                                             \
        char first_[256] = "";                                                                  \
        int n_ = extra_entries(names_, sizeof names_ / sizeof names_[0], first_, sizeof first_); \
        if (n_ != 0)                                                                            \
            fail_msg("%d unexpected file(s) left, e.g. %s", n_, first_);                        \
    } while (0)

static void assert_one_line(const char *err, const char *path, const char *what)
{
    if (strchr(err, '\n') != NULL || strstr(err, path) == NULL || strstr(err, what) == NULL)
        fail_msg("expected one line naming %s and \"%s\", got: %s", path, what, err);
}

static void test_writes_and_replaces(void **state)
{
    (void)state;
    char path[300], buf[256], err[512] = "";
    path_in(path, sizeof path, "report.json");
    assert_int_equal(ub_write_file_atomic(path, "{\"a\": 1}", 8, err, sizeof err), 0);
    assert_int_equal(read_file(path, buf, sizeof buf), 8);
    assert_string_equal(buf, "{\"a\": 1}");
    /* Shorter over longer: the old file's tail must not survive. */
    assert_int_equal(ub_write_file_atomic(path, "[]", 2, err, sizeof err), 0);
    assert_int_equal(read_file(path, buf, sizeof buf), 2);
    assert_string_equal(buf, "[]");
    assert_int_equal(ub_write_file_atomic(path, "", 0, err, sizeof err), 0);
    assert_int_equal(read_file(path, buf, sizeof buf), 0);
    ASSERT_ONLY("report.json");
}

static void test_json_document(void **state)
{
    (void)state;
    char path[300], buf[256], err[512] = "";
    path_in(path, sizeof path, "plan.json");
    json_t *doc = json_pack("{s:i, s:[f, s]}", "usbyte_plan", 1, "blocks", 0.5, "x");
    assert_non_null(doc);
    assert_int_equal(ub_write_json_atomic(path, doc, JSON_COMPACT | JSON_SORT_KEYS, err, sizeof err), 0);
    read_file(path, buf, sizeof buf);
    assert_string_equal(buf, "{\"blocks\":[0.5,\"x\"],\"usbyte_plan\":1}");
    /* The same rules as for bytes: a directory is left alone. */
    char d[300];
    path_in(d, sizeof d, "adir");
    assert_int_equal(mkdir(d, 0755), 0);
    assert_int_equal(ub_write_json_atomic(d, doc, 0, err, sizeof err), -1);
    assert_one_line(err, d, "a directory");
    json_decref(doc);
    assert_int_equal(ub_write_json_atomic(path, NULL, 0, err, sizeof err), -1);
    assert_one_line(err, path, "JSON");
    ASSERT_ONLY("plan.json", "adir");
}

static void test_refuses_directory(void **state)
{
    (void)state;
    char path[300], err[512] = "";
    path_in(path, sizeof path, "adir");
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(ub_write_file_atomic(path, "x", 1, err, sizeof err), -1);
    assert_one_line(err, path, "a directory");
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    ASSERT_ONLY("adir");
}

static void test_refuses_symlink_target(void **state)
{
    (void)state;
    char path[300], victim[300], buf[64], err[512] = "";
    path_in(path, sizeof path, "link.json");
    path_in(victim, sizeof victim, "victim");
    put_file(victim, "keep");
    assert_int_equal(symlink(victim, path), 0);
    assert_int_equal(ub_write_file_atomic(path, "x", 1, err, sizeof err), -1);
    assert_one_line(err, path, "a symbolic link");
    read_file(victim, buf, sizeof buf);
    assert_string_equal(buf, "keep");
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    ASSERT_ONLY("link.json", "victim");
}

static void test_refuses_fifo_without_blocking(void **state)
{
    (void)state;
    char path[300], err[512] = "";
    path_in(path, sizeof path, "fifo");
    assert_int_equal(mkfifo(path, 0644), 0);
    alarm(20);   /* opening a FIFO without a reader would block forever: fail instead */
    assert_int_equal(ub_write_file_atomic(path, "x", 1, err, sizeof err), -1);
    alarm(0);
    assert_one_line(err, path, "a FIFO");
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    ASSERT_ONLY("fifo");
}

static bool is_dev_null(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3;
}

/* The audit's case: as root, USBYTE_REPORT=/dev/null turned /dev/null into a regular file.  A
 * copy of the device in the test directory first (where a regression harms nothing); the real
 * one only once the copy was left alone, or when we cannot replace it anyway. */
static void test_refuses_dev_null(void **state)
{
    (void)state;
    char path[300], err[512] = "";
    path_in(path, sizeof path, "null");
    bool copy = mknod(path, S_IFCHR | 0666, makedev(1, 3)) == 0;
    if (copy) {
        assert_int_equal(ub_write_file_atomic(path, "x", 1, err, sizeof err), -1);
        assert_one_line(err, path, "a character device");
        assert_true(is_dev_null(path));
        ASSERT_ONLY("null");
    } else if (geteuid() == 0) {
        print_message("cannot make a device node (%s): /dev/null itself left untested\n", strerror(errno));
        return;
    }
    assert_true(is_dev_null("/dev/null"));
    assert_int_equal(ub_write_file_atomic("/dev/null", "x", 1, err, sizeof err), -1);
    assert_one_line(err, "/dev/null", "a character device");
    assert_true(is_dev_null("/dev/null"));
}

static void test_missing_directory(void **state)
{
    (void)state;
    char path[300], err[512] = "";
    path_in(path, sizeof path, "no-such-dir/report.json");
    assert_int_equal(ub_write_file_atomic(path, "x", 1, err, sizeof err), -1);
    assert_one_line(err, path, strerror(ENOENT));
    assert_int_equal(ub_write_file_atomic("", "x", 1, err, sizeof err), -1);
    assert_true(err[0] != '\0');
}

/* The temporary the writer makes for random value v. */
static void temp_name(char *out, size_t len, const char *path, uint64_t v)
{
    snprintf(out, len, "%s.%ld.%016llx.partial", path, (long)getpid(), (unsigned long long)v);
}

static void test_planted_symlinks_never_followed(void **state)
{
    (void)state;
    char path[300], victim[300], legacy[320], planted[400], buf[64], err[512] = "";
    path_in(path, sizeof path, "r.json");
    path_in(victim, sizeof victim, "victim");
    put_file(victim, "keep");
    /* The old fixed name, and the first name the writer will try. */
    snprintf(legacy, sizeof legacy, "%s.partial", path);
    assert_int_equal(symlink(victim, legacy), 0);
    static const uint64_t script[] = {0x1111, 0x2222};
    temp_name(planted, sizeof planted, path, script[0]);
    assert_int_equal(symlink(victim, planted), 0);
    fake_random = script;
    fake_random_n = 2;
    fake_random_next = 0;
    int rc = ub_write_file_atomic(path, "new", 3, err, sizeof err);
    size_t draws = fake_random_next;
    fake_random = NULL;
    assert_int_equal(rc, 0);
    assert_int_equal(draws, 2);   /* the planted name was taken, the next one used */
    read_file(victim, buf, sizeof buf);
    assert_string_equal(buf, "keep");
    read_file(path, buf, sizeof buf);
    assert_string_equal(buf, "new");
    struct stat st;
    assert_int_equal(lstat(planted, &st), 0);
    assert_true(S_ISLNK(st.st_mode));   /* someone else's file: not ours to remove */
    const char *planted_base = strrchr(planted, '/') + 1;
    ASSERT_ONLY("r.json", "victim", "r.json.partial", planted_base);

    /* Every name taken: a clear error, nothing written through the links. */
    static const uint64_t stuck[] = {0x1111};
    fake_random = stuck;
    fake_random_n = 1;
    fake_random_next = 0;
    rc = ub_write_file_atomic(path, "again", 5, err, sizeof err);
    fake_random = NULL;
    assert_int_equal(rc, -1);
    assert_one_line(err, path, "names taken");
    read_file(victim, buf, sizeof buf);
    assert_string_equal(buf, "keep");
    read_file(path, buf, sizeof buf);
    assert_string_equal(buf, "new");
}

/* A writer's file: "<id> <size>\n" then size - header bytes of one letter.  Whole iff the
 * header matches the length and every byte after it is the writer's letter. */
static size_t make_content(char *buf, int id, size_t size)
{
    int h = snprintf(buf, size, "%d %zu\n", id, size);
    memset(buf + h, 'a' + id, size - (size_t)h);
    return size;
}

static bool content_whole(const char *buf, long n)
{
    int id;
    size_t size;
    if (n <= 0 || sscanf(buf, "%d %zu\n", &id, &size) != 2 || (long)size != n || id < 0 || id > 25)
        return false;
    const char *body = strchr(buf, '\n') + 1;
    for (const char *p = body; p < buf + n; p++)
        if (*p != 'a' + id)
            return false;
    return true;
}

enum { WRITERS = 4, WRITES = 40, MAX_SIZE = 300000 };

static void test_concurrent_writers_one_path(void **state)
{
    (void)state;
    char path[300];
    path_in(path, sizeof path, "shared.json");
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            static char buf[MAX_SIZE];
            char err[512];
            for (int i = 0; i < WRITES; i++) {
                /* Sizes differ between writers and writes, so a torn or shared file shows. */
                size_t size = 1000 + (size_t)((w * 7919 + i * 104729) % (MAX_SIZE - 1000));
                if (ub_write_file_atomic(path, buf, make_content(buf, w, size), err, sizeof err) != 0) {
                    fprintf(stderr, "writer %d: %s\n", w, err);
                    _exit(1);
                }
            }
            _exit(0);
        }
    }
    /* Read while they write: every complete read is one writer's whole file. */
    static char got[MAX_SIZE + 1];
    int reads = 0, running = WRITERS;
    while (running > 0) {
        long n = read_file(path, got, sizeof got);
        if (n >= 0) {
            reads++;
            if (!content_whole(got, n))
                fail_msg("read %d: a torn file of %ld bytes (starts \"%.20s\")", reads, n, got);
        }
        int status;
        pid_t done;
        while ((done = waitpid(-1, &status, WNOHANG)) > 0) {
            running--;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("writer %d failed (status %d)", (int)done, status);
        }
    }
    long n = read_file(path, got, sizeof got);
    assert_true(content_whole(got, n));
    ASSERT_ONLY("shared.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_writes_and_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_document, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_symlink_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_fifo_without_blocking, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_dev_null, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_planted_symlinks_never_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers_one_path, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
