/* Profile and plan JSON I/O: defaults, round trips, every class of bad input with its one-line
 * message, and every shared profile loading. */
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

#include "usbyte/io.h"
#include "usbyte/model.h"

/* The test's own JSON text, which must parse (the readers are tested, not jansson). */
static json_t *json_of(const char *text)
{
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (!root)
        fail_msg("test JSON does not parse: %s", je.text);
    return root;
}

/* The reader rejected `text` with exactly `message`. */
static void expect_message(const char *text, int rc, const char *err, const char *message)
{
    assert_int_equal(rc, -1);
    if (strcmp(err, message) != 0)
        fail_msg("for %s\n got  \"%s\"\n want \"%s\"", text, err, message);
}

static int parse_text(const char *text, ub_profile *p, char *err, size_t errlen)
{
    json_t *root = json_of(text);
    int rc = ub_profile_from_json(root, "t.json", p, err, errlen);
    json_decref(root);
    return rc;
}

static void expect_error(const char *text, const char *message)
{
    ub_profile p;
    char err[512] = "";
    expect_message(text, parse_text(text, &p, err, sizeof(err)), err, message);
    /* A failed parse leaves an empty profile that is safe to free. */
    assert_int_equal(p.n_calls, 0);
    ub_profile_free(&p);
}

#define CALL1 "\"calls\": [{\"bytes\": 8, \"ready\": 0.5}]"

static void test_minimal_profile_gets_defaults(void **state)
{
    (void)state;
    ub_profile p;
    char err[256];
    assert_int_equal(parse_text("{\"usbyte_profile\": 1, \"backward_end\": 1.5, " CALL1 "}", &p, err, sizeof(err)), 0);
    assert_null(p.name);
    assert_null(p.source);
    assert_int_equal(p.ranks, 0);
    assert_false(p.has_net);
    assert_true(p.align == 0 && p.staging_max == 0);
    assert_true(p.gap == 0.0 && p.interference == 0.0);
    assert_int_equal(p.n_forward, 1);
    assert_true(p.forward[0] == 0.0);
    assert_int_equal(p.n_calls, 1);
    assert_true(p.calls[0].bytes == 8);
    assert_true(p.calls[0].ready == 0.5);
    assert_int_equal(p.calls[0].need, 0);
    assert_int_equal(p.calls[0].dtype, UB_DTYPE_FLOAT32);
    assert_int_equal(p.calls[0].op, UB_OP_SUM);
    assert_true(p.calls[0].merge);
    assert_true(p.calls[0].measured_comm < 0);
    assert_null(p.calls[0].name);
    ub_profile_free(&p);
}

static const char *full_profile =
    "{\"usbyte_profile\": 1, \"name\": \"n\", \"source\": \"s\", \"ranks\": 8,"
    " \"net\": {\"alpha\": 1.4e-4, \"beta\": 2.0e-10, \"copy_beta\": 1e-11},"
    " \"align\": 256, \"staging_max\": 67108864,"
    " \"backward_end\": 0.1234, \"gap\": 0.001, \"interference\": 0.25, \"forward\": [0.002, 0.001], \"future_key\": [1, 2],"
    " \"calls\": ["
    "  {\"name\": \"fc.weight\", \"bytes\": 8192000, \"ready\": 0.0021, \"need\": 1, \"dtype\": \"bfloat16\","
    "   \"op\": \"max\", \"merge\": false, \"measured_comm\": 0.003, \"extra\": {}},"
    "  {\"bytes\": 4096, \"ready\": 0}"
    "]}";

static void test_full_profile(void **state)
{
    (void)state;
    ub_profile p;
    char err[256];
    assert_int_equal(parse_text(full_profile, &p, err, sizeof(err)), 0);
    assert_string_equal(p.name, "n");
    assert_string_equal(p.source, "s");
    assert_int_equal(p.ranks, 8);
    assert_true(p.has_net);
    assert_true(p.alpha == 1.4e-4 && p.beta == 2.0e-10 && p.copy_beta == 1e-11);
    assert_true(p.align == 256 && p.staging_max == 67108864);
    assert_true(p.backward_end == 0.1234 && p.gap == 0.001 && p.interference == 0.25);
    assert_int_equal(p.n_forward, 2);
    assert_true(p.forward[1] == 0.001);
    assert_int_equal(p.n_calls, 2);
    assert_string_equal(p.calls[0].name, "fc.weight");
    assert_int_equal(p.calls[0].need, 1);
    assert_int_equal(p.calls[0].dtype, UB_DTYPE_BFLOAT16);
    assert_int_equal(p.calls[0].op, UB_OP_MAX);
    assert_false(p.calls[0].merge);
    assert_true(p.calls[0].measured_comm == 0.003);
    assert_true(p.calls[1].ready == 0.0);
    ub_profile_free(&p);
}

static void assert_same_profile(const ub_profile *a, const ub_profile *b)
{
    assert_true((a->name == NULL) == (b->name == NULL));
    if (a->name)
        assert_string_equal(a->name, b->name);
    assert_true((a->source == NULL) == (b->source == NULL));
    assert_int_equal(a->ranks, b->ranks);
    assert_int_equal(a->has_net, b->has_net);
    assert_true(a->alpha == b->alpha && a->beta == b->beta && a->copy_beta == b->copy_beta);
    assert_true(a->align == b->align && a->staging_max == b->staging_max);
    assert_true(a->backward_end == b->backward_end && a->gap == b->gap && a->interference == b->interference);
    assert_int_equal(a->n_forward, b->n_forward);
    for (int s = 0; s < a->n_forward; s++)
        assert_true(a->forward[s] == b->forward[s]);
    assert_int_equal(a->n_calls, b->n_calls);
    for (int k = 0; k < a->n_calls; k++) {
        const ub_call *x = &a->calls[k], *y = &b->calls[k];
        assert_true((x->name == NULL) == (y->name == NULL));
        if (x->name)
            assert_string_equal(x->name, y->name);
        assert_true(x->bytes == y->bytes && x->ready == y->ready && x->need == y->need);
        assert_true(x->dtype == y->dtype && x->op == y->op && x->merge == y->merge);
        assert_true(x->measured_comm == y->measured_comm);
    }
}

/* to_json then from_json gives back the same profile, bit for bit, in memory and via a file. */
static void test_round_trip(void **state)
{
    (void)state;
    ub_profile p, q, r, c;
    char err[256];
    assert_int_equal(parse_text(full_profile, &p, err, sizeof(err)), 0);
    p.calls[1].ready = 0.1 + 0.2; /* not representable in few digits: needs 17 significant digits */
    json_t *j = ub_profile_to_json(&p);
    assert_non_null(j);
    assert_int_equal(ub_profile_from_json(j, "rt", &q, err, sizeof(err)), 0);
    json_decref(j);
    assert_same_profile(&p, &q);

    char path[] = "/tmp/usbyte_test_profile_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(ub_profile_save(path, &p, err, sizeof(err)), 0);
    assert_int_equal(ub_profile_load(path, &r, err, sizeof(err)), 0);
    unlink(path);
    assert_same_profile(&p, &r);

    assert_int_equal(ub_profile_copy(&c, &p), 0);
    ub_profile_free(&p); /* the copy must not share memory with the original */
    assert_same_profile(&c, &q);
    ub_profile_free(&q);
    ub_profile_free(&r);
    ub_profile_free(&c);
}

static void test_bad_profiles(void **state)
{
    (void)state;
#define HEAD "{\"usbyte_profile\": 1, \"backward_end\": 1, "
    expect_error("[1, 2]", "t.json: top level: must be an object, got an array");
    expect_error("{\"backward_end\": 1, " CALL1 "}", "t.json: usbyte_profile: missing (not a usbyte profile)");
    expect_error("{\"usbyte_profile\": 2, \"backward_end\": 1, " CALL1 "}",
                 "t.json: usbyte_profile: unsupported version 2 (expected 1)");
    expect_error(HEAD "\"calls\": [{\"bytes\": 8, \"ready\": 0}, {\"bytes\": 8, \"ready\": 0}, {\"bytes\": 8, "
                      "\"ready\": 0}, {\"bytes\": -5, \"ready\": 0}]}",
                 "t.json: calls[3].bytes: must be a positive integer, got -5");
    expect_error(HEAD "\"calls\": [{\"bytes\": 0, \"ready\": 0}]}",
                 "t.json: calls[0].bytes: must be a positive integer, got 0");
    expect_error(HEAD "\"calls\": [{\"bytes\": 8.5, \"ready\": 0}]}",
                 "t.json: calls[0].bytes: must be a positive integer, got 8.5");
    expect_error(HEAD "\"calls\": [{\"bytes\": \"8\", \"ready\": 0}]}",
                 "t.json: calls[0].bytes: must be a positive integer, got \"8\"");
    expect_error(HEAD "\"calls\": [{\"ready\": 0}]}", "t.json: calls[0].bytes: missing");
    expect_error(HEAD "\"calls\": [{\"bytes\": 8}]}", "t.json: calls[0].ready: missing");
    expect_error(HEAD "\"calls\": [{\"bytes\": 8, \"ready\": -0.5}]}",
                 "t.json: calls[0].ready: must be a finite number >= 0, got -0.5");
    expect_error(HEAD "\"calls\": [{\"bytes\": 8, \"ready\": null}]}",
                 "t.json: calls[0].ready: must be a number, got null");
    expect_error(HEAD "\"forward\": [1, 2], \"calls\": [{\"bytes\": 8, \"ready\": 0, \"need\": 2}]}",
                 "t.json: calls[0].need: must be an integer from 0 to 1 (a forward segment), got 2");
    expect_error(HEAD "\"calls\": [{\"bytes\": 8, \"ready\": 0, \"need\": -1}]}",
                 "t.json: calls[0].need: must be an integer from 0 to 0 (a forward segment), got -1");
    expect_error(HEAD "\"calls\": [{\"bytes\": 8, \"ready\": 0, \"dtype\": \"float128\"}]}",
                 "t.json: calls[0].dtype: unknown data type \"float128\"");
    expect_error(HEAD "\"calls\": [{\"bytes\": 8, \"ready\": 0, \"op\": 3}]}",
                 "t.json: calls[0].op: unknown reduction op 3");
    expect_error(HEAD "\"calls\": [{\"bytes\": 8, \"ready\": 0, \"merge\": \"no\"}]}",
                 "t.json: calls[0].merge: must be true or false, got \"no\"");
    expect_error(HEAD "\"calls\": [{\"bytes\": 8, \"ready\": 0, \"measured_comm\": -1}]}",
                 "t.json: calls[0].measured_comm: must be a finite number >= 0, got -1");
    expect_error(HEAD "\"calls\": [{\"bytes\": 8, \"ready\": 0, \"name\": 5}]}",
                 "t.json: calls[0].name: must be a string, got 5");
    expect_error(HEAD "\"calls\": [7]}", "t.json: calls[0]: must be an object, got 7");
    expect_error(HEAD "\"calls\": []}", "t.json: calls: must be a non-empty array of calls, got an array");
    expect_error(HEAD "\"calls\": {}}", "t.json: calls: must be a non-empty array of calls, got an object");
    expect_error(HEAD "\"other\": 1}", "t.json: calls: missing");
    expect_error(HEAD "\"forward\": [], " CALL1 "}",
                 "t.json: forward: must be a non-empty array of seconds, got an array");
    expect_error(HEAD "\"forward\": [0.1, -2], " CALL1 "}",
                 "t.json: forward[1]: must be a finite number >= 0, got -2");
    expect_error(HEAD "\"gap\": \"x\", " CALL1 "}", "t.json: gap: must be a number, got \"x\"");
    expect_error(HEAD "\"interference\": -0.5, " CALL1 "}",
                 "t.json: interference: must be a finite number >= 0, got -0.5");
    expect_error(HEAD "\"interference\": 1.5, " CALL1 "}",
                 "t.json: interference: must be from 0 to 1 (compute at half speed beside the link), got 1.5");
    expect_error("{\"usbyte_profile\": 1, " CALL1 "}",
                 "t.json: backward_end: missing (seconds from backward start to its end)");
    expect_error(HEAD "\"net\": {\"alpha\": 1e-4}, " CALL1 "}", "t.json: net.beta: missing (seconds per byte)");
    expect_error(HEAD "\"net\": {\"alpha\": -1e-4, \"beta\": 1e-9}, " CALL1 "}",
                 "t.json: net.alpha: must be a finite number >= 0, got -0.0001");
    expect_error(HEAD "\"net\": {\"alpha\": 1e-4, \"beta\": 1e-9, \"copy_beta\": true}, " CALL1 "}",
                 "t.json: net.copy_beta: must be a number, got true");
    expect_error(HEAD "\"net\": 3, " CALL1 "}", "t.json: net: must be an object with alpha and beta, got 3");
    expect_error(HEAD "\"ranks\": 0, " CALL1 "}", "t.json: ranks: must be a positive integer, got 0");
    expect_error(HEAD "\"name\": [], " CALL1 "}", "t.json: name: must be a string, got an array");
    expect_error(HEAD "\"align\": -4, " CALL1 "}", "t.json: align: must be an integer number of bytes >= 0, got -4");
    expect_error(HEAD "\"staging_max\": 1.5, " CALL1 "}",
                 "t.json: staging_max: must be an integer number of bytes >= 0, got 1.5");
    /* The runtime issues `count` elements: bytes must be whole elements of the dtype. */
    expect_error(HEAD "\"calls\": [{\"bytes\": 8, \"ready\": 0}, {\"bytes\": 4001, \"ready\": 0}]}",
                 "t.json: calls[1].bytes: 4001 is not a whole number of float32 elements (4 bytes each)");
    expect_error(HEAD "\"calls\": [{\"bytes\": 6, \"ready\": 0, \"dtype\": \"float64\"}]}",
                 "t.json: calls[0].bytes: 6 is not a whole number of float64 elements (8 bytes each)");
#undef HEAD
}

static void test_file_errors(void **state)
{
    (void)state;
    ub_profile p;
    char err[512];
    assert_int_equal(ub_profile_load("/nonexistent/usbyte.json", &p, err, sizeof(err)), -1);
    assert_string_equal(err, "/nonexistent/usbyte.json: cannot read: No such file or directory");

    assert_int_equal(ub_profile_load("/tmp", &p, err, sizeof(err)), -1);
    assert_string_equal(err, "/tmp: cannot read: Is a directory");

    char path[] = "/tmp/usbyte_test_bad_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "{\"usbyte_profile\": 1,\n \"calls\": [\n";
    assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(ub_profile_load(path, &p, err, sizeof(err)), -1);
    char want[256];
    snprintf(want, sizeof(want), "%s: line 3, column 0: malformed JSON", path);
    if (strncmp(err, want, strlen(want)) != 0)
        fail_msg("got \"%s\", want a message starting \"%s\"", err, want);
    assert_null(strchr(err, '\n'));

    /* Duplicate keys are ambiguous: rejected. */
    FILE *f = fopen(path, "w");
    fputs("{\"usbyte_profile\": 1, \"usbyte_profile\": 1}", f);
    fclose(f);
    assert_int_equal(ub_profile_load(path, &p, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "duplicate object key"));

    /* A control byte the parser quotes ("near '\x1c'") is shown escaped: the error stays one
     * printable line, whatever a terminal or a line reader makes of such bytes. */
    f = fopen(path, "w");
    fputs("{\"usbyte_profile\": \x1c 1}", f);
    fclose(f);
    assert_int_equal(ub_profile_load(path, &p, err, sizeof(err)), -1);
    if (strstr(err, "near '\\x1c'") == NULL)
        fail_msg("got \"%s\", want the control byte shown as \\x1c", err);
    for (const char *c = err; *c; c++)
        assert_false((unsigned char)*c < 0x20 || *c == 0x7f);
    unlink(path);
}

/* ---- plans ---- */

static int parse_plan(const char *text, ub_plan *plan, char *err, size_t errlen)
{
    json_t *root = json_of(text);
    int rc = ub_plan_from_json(root, "p.json", plan, err, errlen);
    json_decref(root);
    return rc;
}

static void expect_plan_error(const char *text, const char *message)
{
    ub_plan plan;
    ub_plan_init(&plan, "");
    char err[512] = "";
    expect_message(text, parse_plan(text, &plan, err, sizeof(err)), err, message);
    ub_plan_free(&plan);
}

static void test_plan_round_trip(void **state)
{
    (void)state;
    ub_plan a, b;
    ub_plan_init(&a, "");
    ub_plan_init(&b, "");
    char err[256];
    assert_int_equal(parse_plan("{\"usbyte_plan\": 1, \"policy\": \"usbyte\", \"iteration\": 0.1301, \"lower_bound\": "
                                "0.1199, \"params\": \"unit=4\", \"unknown\": 1, \"blocks\": [{\"segments\": [[3, 0, "
                                "1048576], [4, 0, 4096]], \"start\": 0.0125, \"end\": 0.0131}, {\"segments\": [[0, 16, 8]]}]}",
                                &a, err, sizeof(err)),
                     0);
    assert_string_equal(a.policy, "usbyte");
    assert_string_equal(a.params, "unit=4");
    assert_true(a.iteration == 0.1301 && a.lower_bound == 0.1199);
    assert_int_equal(a.n_blocks, 2);
    assert_int_equal(a.n_segments, 3);
    assert_int_equal(a.blocks[0].n_segments, 2);
    assert_true(a.segments[1].call == 4 && a.segments[1].offset == 0 && a.segments[1].length == 4096);
    assert_true(a.blocks[1].first_segment == 2 && a.segments[2].offset == 16);
    assert_true(a.blocks[0].start == 0.0125 && a.blocks[0].end == 0.0131);

    json_t *j = ub_plan_to_json(&a);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "usbyte_plan")), 1);
    assert_non_null(json_object_get(j, "plan_seconds"));
    assert_int_equal(ub_plan_from_json(j, "rt", &b, err, sizeof(err)), 0);
    json_decref(j);
    assert_string_equal(b.policy, a.policy);
    assert_string_equal(b.params, a.params);
    assert_int_equal(b.n_blocks, a.n_blocks);
    assert_int_equal(b.n_segments, a.n_segments);
    for (uint32_t i = 0; i < a.n_segments; i++) /* field by field: the struct has padding */
        assert_true(a.segments[i].call == b.segments[i].call && a.segments[i].offset == b.segments[i].offset &&
                    a.segments[i].length == b.segments[i].length);
    for (uint32_t i = 0; i < a.n_blocks; i++)
        assert_true(a.blocks[i].start == b.blocks[i].start && a.blocks[i].end == b.blocks[i].end &&
                    a.blocks[i].n_segments == b.blocks[i].n_segments);

    /* "optimal" round-trips, and is written either way. */
    a.optimal = true;
    j = ub_plan_to_json(&a);
    assert_true(json_is_true(json_object_get(j, "optimal")));
    assert_int_equal(ub_plan_from_json(j, "rt", &b, err, sizeof(err)), 0);
    assert_true(b.optimal);
    json_decref(j);
    a.optimal = false;
    j = ub_plan_to_json(&a);
    assert_true(json_is_false(json_object_get(j, "optimal")));
    json_decref(j);

    /* "params" is written only when a policy chose something. */
    a.params[0] = '\0';
    j = ub_plan_to_json(&a);
    assert_null(json_object_get(j, "params"));
    json_decref(j);
    ub_plan_free(&a);
    ub_plan_free(&b);
}

static void test_bad_plans(void **state)
{
    (void)state;
    expect_plan_error("[]", "p.json: top level: must be an object, got an array");
    expect_plan_error("{\"blocks\": []}", "p.json: usbyte_plan: missing (not a usbyte plan)");
    expect_plan_error("{\"usbyte_plan\": 3, \"blocks\": []}", "p.json: usbyte_plan: unsupported version (expected 1)");
    expect_plan_error("{\"usbyte_plan\": 1}", "p.json: blocks: missing");
    expect_plan_error("{\"usbyte_plan\": 1, \"blocks\": {}}", "p.json: blocks: must be an array, got an object");
    expect_plan_error("{\"usbyte_plan\": 1, \"policy\": 1, \"blocks\": []}",
                      "p.json: policy: must be a string, got an integer");
    expect_plan_error("{\"usbyte_plan\": 1, \"iteration\": \"fast\", \"blocks\": []}",
                      "p.json: iteration: must be a finite number, got a string");
    expect_plan_error("{\"usbyte_plan\": 1, \"blocks\": [5]}", "p.json: blocks[0]: must be an object, got an integer");
    expect_plan_error("{\"usbyte_plan\": 1, \"blocks\": [{}]}", "p.json: blocks[0].segments: missing");
    expect_plan_error("{\"usbyte_plan\": 1, \"blocks\": [{\"segments\": [[0,0,1]]}, {\"segments\": []}]}",
                      "p.json: blocks[1].segments: must be a non-empty array, got an empty array");
    expect_plan_error("{\"usbyte_plan\": 1, \"blocks\": [{\"segments\": [[0, 0]]}]}",
                      "p.json: blocks[0].segments[0]: must be [call, offset_bytes, length_bytes], got an array");
    expect_plan_error("{\"usbyte_plan\": 1, \"blocks\": [{\"segments\": [[0, 0, 1], [1, 0.5, 2]]}]}",
                      "p.json: blocks[0].segments[1][1] (offset): must be an integer, got a real number");
    expect_plan_error("{\"usbyte_plan\": 1, \"blocks\": [{\"segments\": [[-1, 0, 1]]}]}",
                      "p.json: blocks[0].segments[0][0] (call): must be a call index >= 0, got -1");
    expect_plan_error("{\"usbyte_plan\": 1, \"blocks\": [{\"segments\": [[0, -4, 1]]}]}",
                      "p.json: blocks[0].segments[0][1] (offset): must be >= 0, got -4");
    expect_plan_error("{\"usbyte_plan\": 1, \"blocks\": [{\"segments\": [[0, 0, 0]]}]}",
                      "p.json: blocks[0].segments[0][2] (length): must be > 0, got 0");
    expect_plan_error("{\"usbyte_plan\": 1, \"blocks\": [{\"segments\": [[0, 0, 1]], \"end\": null}]}",
                      "p.json: blocks[0].end: must be a finite number, got null");
    expect_plan_error("{\"usbyte_plan\": 1, \"optimal\": 1, \"blocks\": []}",
                      "p.json: optimal: must be true or false, got an integer");
}

/* Every profile shipped in data/profiles loads and round-trips.  Run from the repository's
 * root (make test does); USBYTE_PROFILES names another folder. */
static void test_shipped_profiles_load(void **state)
{
    (void)state;
    const char *dir = getenv("USBYTE_PROFILES");
    if (!dir)
        dir = "data/profiles";
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("cannot open the profile folder %s (run from the repository's root)", dir);
    int loaded = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char path[4096], err[512];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        ub_profile p, q;
        if (ub_profile_load(path, &p, err, sizeof(err)) != 0)
            fail_msg("%s", err);
        assert_true(p.n_calls > 0);
        json_t *j = ub_profile_to_json(&p);
        assert_int_equal(ub_profile_from_json(j, path, &q, err, sizeof(err)), 0);
        json_decref(j);
        assert_same_profile(&p, &q);
        ub_profile_free(&p);
        ub_profile_free(&q);
        loaded++;
    }
    closedir(d);
    print_message("%d profiles of %s loaded\n", loaded, dir);
    assert_true(loaded > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_profile_gets_defaults),
        cmocka_unit_test(test_full_profile),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bad_profiles),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_plan_round_trip),
        cmocka_unit_test(test_bad_plans),
        cmocka_unit_test(test_shipped_profiles_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
