/* Unit tests of the emulated NCCL's measured network (USBYTE_EMU_NET) and jitter
 * (USBYTE_EMU_JITTER_PCT): the table's interpolation, one line for a bad file, every shipped
 * curve of data/net loading, and the jitter factor's bounds and repeatability (the format itself:
 * tests/unit/profiler/test_net_table.c).  Run from
 * the repository root (data/net). */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../model.h"

static const char *const TABLE = "# source: a test\n"
                                 "# columns: bytes\tus\tin_place_us\n"
                                 "1024\t10\t9\n"
                                 "\n"
                                 "4096\t40\t30\r\n"
                                 "1048576\t1000\t900\n";

static void test_interpolation(void **state)
{
    (void)state;
    ub_net_table t;
    char err[256] = "";
    assert_int_equal(ub_net_table_parse(TABLE, "t.tsv", &t, err, sizeof err), 0);
    assert_int_equal(t.n, 3);
    assert_true(t.has_in_place);
    /* below the first row: the first row's time */
    assert_float_equal(emu_net_us(&t, 4, 0), 10.0, 0);
    assert_float_equal(emu_net_us(&t, 1024, 1), 9.0, 0);
    /* on a row, and linear in bytes between rows */
    assert_float_equal(emu_net_us(&t, 4096, 0), 40.0, 1e-12);
    assert_float_equal(emu_net_us(&t, 2560, 0), 25.0, 1e-12);
    assert_float_equal(emu_net_us(&t, 2560, 1), 19.5, 1e-12);
    assert_float_equal(emu_net_us(&t, 4096 + (1048576 - 4096) / 4.0, 0), 40.0 + 960.0 / 4, 1e-9);
    /* above the last row: its time times the ratio of bytes */
    assert_float_equal(emu_net_us(&t, 4.0 * 1048576, 0), 4000.0, 1e-9);
    assert_float_equal(emu_net_us(&t, 3.0 * 1048576, 1), 2700.0, 1e-9);
    ub_net_table_free(&t);

    /* Two columns: in-place calls use the only time there is. */
    assert_int_equal(ub_net_table_parse("8\t5\n16\t7\n", "two.tsv", &t, err, sizeof err), 0);
    assert_false(t.has_in_place);
    assert_float_equal(emu_net_us(&t, 12, 1), 6.0, 1e-12);
    ub_net_table_free(&t);
}

static char *read_all(FILE *f)
{
    static char buf[2048];
    fflush(f);
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* USBYTE_EMU_NET through the model: a good file times allreduce (and only allreduce) by the
 * table whatever the rank count; a bad one gives one line, once, and the formula. */
static void test_env(void **state)
{
    (void)state;
    char dir[] = "/tmp/emu-net-XXXXXX", good[64], bad[64];
    assert_non_null(mkdtemp(dir));
    snprintf(good, sizeof good, "%s/good.tsv", dir);
    snprintf(bad, sizeof bad, "%s/bad.tsv", dir);
    write_file(good, TABLE);
    write_file(bad, "# x\n8\t5\n4\t6\n");
    FILE *warn = tmpfile();
    struct emu_model m;

    setenv("USBYTE_EMU_NET", good, 1);
    emu_model_from_env(&m, warn);
    assert_string_equal(m.net_file, good);
    assert_string_equal(read_all(warn), "");
    /* 2560 bytes = 640 floats: 25 us out of place, 19.5 in place, on 2 ranks as on 64 */
    assert_float_equal(emu_model_collective_us(&m, EMU_ALLREDUCE, 640, 4, 2), 25.0, 1e-12);
    assert_float_equal(emu_model_collective_inplace_us(&m, EMU_ALLREDUCE, 640, 4, 64, 1), 19.5, 1e-12);
    assert_float_equal(emu_model_collective_us(&m, EMU_ALLREDUCE, 640, 4, 1), 0.0, 0);
    /* other collectives keep the formula */
    struct emu_model formula = m;
    formula.net_file[0] = '\0';
    assert_float_equal(emu_model_collective_us(&m, EMU_BROADCAST, 640, 4, 4),
                       emu_model_collective_us(&formula, EMU_BROADCAST, 640, 4, 4), 0);
    assert_float_equal(emu_model_collective_us(&formula, EMU_ALLREDUCE, 640, 4, 2), 2 * 20.0 + 2560 / 1e4, 1e-9);
    assert_true(emu_model_same(&m, &m));
    assert_false(emu_model_same(&m, &formula));

    setenv("USBYTE_EMU_NET", bad, 1);
    emu_model_from_env(&m, warn);
    emu_model_from_env(&m, warn);   /* parsed once: no second line */
    assert_string_equal(m.net_file, "");
    const char *text = read_all(warn);
    assert_int_equal(count_lines(text), 1);
    assert_non_null(strstr(text, "bad.tsv: line 3: bytes 4 not above the previous row's 8"));
    assert_non_null(strstr(text, "using the alpha-beta formula"));
    assert_float_equal(emu_model_collective_us(&m, EMU_ALLREDUCE, 640, 4, 2), 2 * 20.0 + 2560 / 1e4, 1e-9);

    fclose(warn);
    warn = tmpfile();
    char missing[80];
    snprintf(missing, sizeof missing, "%s/none.tsv", dir);
    setenv("USBYTE_EMU_NET", missing, 1);
    emu_model_from_env(&m, warn);
    text = read_all(warn);
    assert_int_equal(count_lines(text), 1);
    assert_non_null(strstr(text, "none.tsv: cannot read: No such file or directory"));
    assert_string_equal(m.net_file, "");
    fclose(warn);
    unsetenv("USBYTE_EMU_NET");
    unlink(good);
    unlink(bad);
    rmdir(dir);
}

/* Every curve shipped in data/net parses, has in-place times, and grows with the bytes at its
 * large end (where it is bandwidth-bound). */
static void test_shipped_curves(void **state)
{
    (void)state;
    DIR *d = opendir("data/net");
    assert_non_null(d);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 4, ".tsv") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "data/net/%s", e->d_name);
        FILE *warn = tmpfile();
        const ub_net_table *t = emu_net_load(path, warn);
        if (t == NULL)
            fail_msg("%s", read_all(warn));
        fclose(warn);
        assert_true(t->n >= 8);
        assert_true(t->has_in_place);
        assert_true(t->rows[t->n - 1].us > t->rows[0].us);
        files++;
    }
    closedir(d);
    printf("%d shipped curves parse\n", files);
    assert_true(files >= 4);
}

static void test_jitter(void **state)
{
    (void)state;
    struct emu_model m = {.alpha_us = 20, .gbps = 10, .payload = 1};
    assert_float_equal(emu_model_jitter(&m, 3, 7), 1.0, 0);
    m.jitter_pct = 5;
    double lo = 2, hi = 0, sum = 0;
    int n = 0, differ_rank = 0;
    for (int rank = 0; rank < 4; rank++)
        for (uint64_t i = 0; i < 5000; i++) {
            double f = emu_model_jitter(&m, rank, i);
            assert_true(f >= 0.95 && f <= 1.05);
            assert_float_equal(f, emu_model_jitter(&m, rank, i), 0);   /* repeatable */
            differ_rank += rank > 0 && f != emu_model_jitter(&m, 0, i);
            lo = fmin(lo, f);
            hi = fmax(hi, f);
            sum += f;
            n++;
        }
    /* Uniform over the band: 20000 draws reach within 0.1% of both ends; the mean's standard
     * error is 0.05/sqrt(3)/sqrt(20000) = 0.0002. */
    assert_true(lo < 0.951 && hi > 1.049);
    assert_float_equal(sum / n, 1.0, 0.001);
    assert_true(differ_rank > 14990);
    /* another seed, other draws */
    struct emu_model other = m;
    other.jitter_seed = 1;
    int same = 0;
    for (uint64_t i = 0; i < 1000; i++)
        same += emu_model_jitter(&other, 0, i) == emu_model_jitter(&m, 0, i);
    assert_true(same < 5);

    setenv("USBYTE_EMU_JITTER_PCT", "5", 1);
    setenv("USBYTE_EMU_JITTER_SEED", "42", 1);
    FILE *warn = tmpfile();
    emu_model_from_env(&m, warn);
    assert_float_equal(m.jitter_pct, 5.0, 0);
    assert_int_equal(m.jitter_seed, 42);
    setenv("USBYTE_EMU_JITTER_PCT", "150", 1);
    setenv("USBYTE_EMU_JITTER_SEED", "-1", 1);
    emu_model_from_env(&m, warn);
    assert_float_equal(m.jitter_pct, 0.0, 0);
    assert_int_equal(m.jitter_seed, 0);
    const char *text = read_all(warn);
    assert_int_equal(count_lines(text), 2);
    assert_non_null(strstr(text, "USBYTE_EMU_JITTER_PCT='150'"));
    assert_non_null(strstr(text, "USBYTE_EMU_JITTER_SEED='-1'"));
    fclose(warn);
    unsetenv("USBYTE_EMU_JITTER_PCT");
    unsetenv("USBYTE_EMU_JITTER_SEED");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interpolation), cmocka_unit_test(test_env),
        cmocka_unit_test(test_shipped_curves), cmocka_unit_test(test_jitter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
