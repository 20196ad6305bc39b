/* Unit tests of the data/net/ table reader (profiler/net_table.c): the rows of a good table,
 * every way a table can be bad named with its file and line in one line, and a file that is not
 * a regular one refused without blocking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "usbyte/net_table.h"

static void test_rows(void **state)
{
    (void)state;
    ub_net_table t;
    char err[256] = "";
    assert_int_equal(ub_net_table_parse("# source: a test\n# columns: bytes\tus\tin_place_us\n1024\t10\t9\n\n"
                                        "4096\t40\t30\r\n1e6\t1000\t900",
                                        "t.tsv", &t, err, sizeof err),
                     0);
    assert_int_equal(t.n, 3);
    assert_true(t.has_in_place);
    assert_float_equal(t.rows[1].bytes, 4096, 0);
    assert_float_equal(t.rows[1].us, 40, 0);
    assert_float_equal(t.rows[1].in_place_us, 30, 0);
    assert_float_equal(t.rows[2].bytes, 1e6, 0);
    ub_net_table_free(&t);
    assert_null(t.rows);

    /* Two columns: the in-place time is the only time there is. */
    assert_int_equal(ub_net_table_parse("8\t5\n16 \t 7 \n", "two.tsv", &t, err, sizeof err), 0);
    assert_false(t.has_in_place);
    assert_float_equal(t.rows[1].in_place_us, 7, 0);
    ub_net_table_free(&t);
}

static void test_bad_tables(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"", "b.tsv: no rows (bytes<TAB>us)"},
        {"# only comments\n\n", "b.tsv: no rows"},
        {"8\t5\n16 7\n", "b.tsv: line 2: expected bytes<TAB>us[<TAB>in_place_us]"},
        {"8\t5\n16\tfast\n", "b.tsv: line 2: the time (us) is missing or not a positive number"},
        {"x\t5\n", "b.tsv: line 1: the bytes are missing or not a positive number"},
        {"8\t5\t-1\n", "b.tsv: line 1: the in-place time (us) is missing or not a positive number"},
        {"8\t5\n# c\n4\t7\n", "b.tsv: line 3: bytes 4 not above the previous row's 8"},
        {"8\t5\n8\t7\n", "b.tsv: line 2: bytes 8 not above"},
        {"8\t5\t4\n16\t7\n", "b.tsv: line 2: 2 columns where the first row has 3"},
        {"8\t5\t4\t3\n", "b.tsv: line 1: more than three columns"},
        {"8\t-5\n", "b.tsv: line 1: the time (us) is"},
        {"8\t0\n", "b.tsv: line 1: the time (us) is"},
        {"8\tnan\n", "b.tsv: line 1: the time (us) is"},
        {"8\tinf\n", "b.tsv: line 1: the time (us) is"},
        {"8\t5\t\n", "b.tsv: line 1: the in-place time (us) is"},
        {"8\t5 5\n", "b.tsv: line 1: the time (us) is"},
        {"8\t \n", "b.tsv: line 1: the time (us) is"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ub_net_table t;
        char err[256] = "";
        assert_int_equal(ub_net_table_parse(cases[i].text, "b.tsv", &t, err, sizeof err), -1);
        assert_null(t.rows);
        assert_int_equal(t.n, 0);
        if (strncmp(err, cases[i].want, strlen(cases[i].want)) != 0)
            fail_msg("case %zu: got '%s', want '%s...'", i, err, cases[i].want);
        assert_null(strchr(err, '\n'));
    }
}

/* A missing file, a directory, a FIFO (which would block a plain read forever), a binary file. */
static void test_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/net-table-XXXXXX", path[96];
    assert_non_null(mkdtemp(dir));
    ub_net_table t;
    char err[256];

    snprintf(path, sizeof path, "%s/none.tsv", dir);
    assert_int_equal(ub_net_table_read(path, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "none.tsv: cannot read: No such file or directory"));

    /* the same messages as every other input file's (usbyte/open_regular.h) */
    assert_int_equal(ub_net_table_read(dir, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, ": cannot read: Is a directory"));

    snprintf(path, sizeof path, "%s/fifo.tsv", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(ub_net_table_read(path, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "fifo.tsv: cannot read: not a regular file"));
    unlink(path);

    snprintf(path, sizeof path, "%s/bin.tsv", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite("8\t5\n\0\x01", 1, 6, f);
    fclose(f);
    assert_int_equal(ub_net_table_read(path, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "bin.tsv: not a text file"));

    f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 1; i <= 5000; i++)   /* larger than any first guess of the buffer */
        fprintf(f, "%d\t%d\n", 8 * i, 5 + i);
    fclose(f);
    assert_int_equal(ub_net_table_read(path, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 5000);
    assert_float_equal(t.rows[4999].us, 5005, 0);
    ub_net_table_free(&t);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_bad_tables),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
