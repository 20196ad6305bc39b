/* Profiles in the docs/model.md JSON format: strict reading with one-line errors that name the
 * origin and the JSON path, and writing that round-trips exactly. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile_io_util.h"
#include "usbyte/atomic_write.h"
#include "usbyte/io.h"
#include "usbyte/model.h"
#include "usbyte/open_regular.h"

/* Largest count of calls or forward segments accepted: keeps every index in an int with room. */
#define MAX_ENTRIES 100000000

json_t *ub_json_load_file(const char *path, char *err, size_t errlen)
{
    const ub_io_where c = {path ? path : "<profile>", err, errlen};
    if (!path) {
        ub_io_fail(&c, "cannot read: %s", strerror(EINVAL));
        return NULL;
    }
    int fd = ub_open_regular(path, err, errlen);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        ub_io_fail(&c, "cannot read: %s", strerror(errno));
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    int read_error = ferror(f);
    fclose(f);
    if (!root) {
        if (read_error)
            ub_io_fail(&c, "cannot read: I/O error");
        else
            ub_io_fail(&c, "line %d, column %d: malformed JSON: %s", je.line, je.column, je.text);
        return NULL;
    }
    return root;
}

/* ---- typed field readers: each names the path on failure ---- */

static int want_finite(const ub_io_where *c, const json_t *v, const char *path, double min, double *out)
{
    if (!json_is_number(v))
        return ub_io_fail(c, "%s: must be a number, got %s", path, ub_json_describe(v).text);
    double x = json_number_value(v);
    if (!isfinite(x) || x < min)
        return ub_io_fail(c, "%s: must be a finite number >= %g, got %s", path, min, ub_json_describe(v).text);
    *out = x;
    return 0;
}

static int want_string(const ub_io_where *c, const json_t *v, const char *path, char **out)
{
    if (!json_is_string(v))
        return ub_io_fail(c, "%s: must be a string, got %s", path, ub_json_describe(v).text);
    *out = strdup(json_string_value(v));
    if (!*out)
        return ub_io_fail(c, "%s: out of memory", path);
    return 0;
}

/* A byte count >= 0 (0 means "no constraint" for align and staging_max). */
static int want_bytes(const ub_io_where *c, const json_t *v, const char *path, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return ub_io_fail(c, "%s: must be an integer number of bytes >= 0, got %s", path, ub_json_describe(v).text);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* net.segments: the cost curve, [{"from": bytes, "alpha": s, "beta": s/B}, ...]. */
static int parse_segments(const ub_io_where *c, const json_t *segs, ub_net_curve *curve)
{
    if (!json_is_array(segs) || json_array_size(segs) < 1 || json_array_size(segs) > UB_NET_MAX_SEGMENTS)
        return ub_io_fail(c, "net.segments: must be an array of 1 to %d segments, got %s", UB_NET_MAX_SEGMENTS,
                          ub_json_describe(segs).text);
    curve->n = (int)json_array_size(segs);
    for (int i = 0; i < curve->n; i++) {
        const json_t *o = json_array_get(segs, (size_t)i);
        char path[64];
        snprintf(path, sizeof path, "net.segments[%d]", i);
        if (!json_is_object(o))
            return ub_io_fail(c, "%s: must be an object with from, alpha and beta, got %s", path,
                              ub_json_describe(o).text);
        static const char *const keys[3] = {"from", "alpha", "beta"};
        double *field[3] = {&curve->seg[i].from, &curve->seg[i].alpha, &curve->seg[i].beta};
        for (int f = 0; f < 3; f++) {
            char fpath[80];
            snprintf(fpath, sizeof fpath, "%s.%s", path, keys[f]);
            const json_t *v = json_object_get(o, keys[f]);
            if (!v)
                return ub_io_fail(c, "%s: missing", fpath);
            /* a segment's alpha is the intercept of its line: below 0 is fine where its cost is not */
            if (want_finite(c, v, fpath, f == 1 ? -DBL_MAX : 0.0, field[f]))
                return -1;
        }
    }
    char why[200];
    if (ub_net_curve_check(curve, true, why, sizeof why))
        return strncmp(why, "segments", 8) == 0 ? ub_io_fail(c, "net.%s", why) : ub_io_fail(c, "net.segments: %s", why);
    return 0;
}

static int parse_net(const ub_io_where *c, const json_t *net, ub_profile *p)
{
    if (!json_is_object(net))
        return ub_io_fail(c, "net: must be an object with alpha and beta, got %s", ub_json_describe(net).text);
    const json_t *a = json_object_get(net, "alpha"), *b = json_object_get(net, "beta");
    if (!a)
        return ub_io_fail(c, "net.alpha: missing (seconds per allreduce)");
    if (!b)
        return ub_io_fail(c, "net.beta: missing (seconds per byte)");
    if (want_finite(c, a, "net.alpha", 0.0, &p->alpha) || want_finite(c, b, "net.beta", 0.0, &p->beta))
        return -1;
    const json_t *cb = json_object_get(net, "copy_beta");
    p->copy_beta = 0.0;
    if (cb && want_finite(c, cb, "net.copy_beta", 0.0, &p->copy_beta))
        return -1;
    p->curve.n = 0;
    const json_t *segs = json_object_get(net, "segments");
    if (segs && parse_segments(c, segs, &p->curve))
        return -1;
    p->has_net = true;
    return 0;
}

static int parse_call(const ub_io_where *c, const json_t *v, int k, ub_profile *p)
{
    char path[64];
    ub_call *call = &p->calls[k];
    call->dtype = UB_DTYPE_FLOAT32;
    call->op = UB_OP_SUM;
    call->merge = true;
    call->need = 0;
    call->measured_comm = -1.0;
    if (!json_is_object(v))
        return ub_io_fail(c, "calls[%d]: must be an object, got %s", k, ub_json_describe(v).text);
    const json_t *f;
    if ((f = json_object_get(v, "name"))) {
        snprintf(path, sizeof(path), "calls[%d].name", k);
        if (want_string(c, f, path, &call->name))
            return -1;
    }
    f = json_object_get(v, "bytes");
    if (!f)
        return ub_io_fail(c, "calls[%d].bytes: missing", k);
    if (!json_is_integer(f) || json_integer_value(f) <= 0)
        return ub_io_fail(c, "calls[%d].bytes: must be a positive integer, got %s", k, ub_json_describe(f).text);
    call->bytes = (uint64_t)json_integer_value(f);
    f = json_object_get(v, "ready");
    if (!f)
        return ub_io_fail(c, "calls[%d].ready: missing", k);
    snprintf(path, sizeof(path), "calls[%d].ready", k);
    if (want_finite(c, f, path, 0.0, &call->ready))
        return -1;
    if ((f = json_object_get(v, "need"))) {
        if (!json_is_integer(f) || json_integer_value(f) < 0 || json_integer_value(f) >= p->n_forward)
            return ub_io_fail(c, "calls[%d].need: must be an integer from 0 to %d (a forward segment), got %s", k,
                              p->n_forward - 1, ub_json_describe(f).text);
        call->need = (int)json_integer_value(f);
    }
    if ((f = json_object_get(v, "dtype"))) {
        int d = json_is_string(f) ? ub_dtype_parse(json_string_value(f)) : -1;
        if (d < 0)
            return ub_io_fail(c, "calls[%d].dtype: unknown data type %s", k, ub_json_describe(f).text);
        call->dtype = (ub_dtype)d;
    }
    if ((f = json_object_get(v, "op"))) {
        int o = json_is_string(f) ? ub_op_parse(json_string_value(f)) : -1;
        if (o < 0)
            return ub_io_fail(c, "calls[%d].op: unknown reduction op %s", k, ub_json_describe(f).text);
        call->op = (ub_op)o;
    }
    /* The runtime issues a call as `count` elements: a size that is not a whole number of
     * elements cannot be an allreduce of that dtype. */
    uint64_t z = ub_dtype_size(call->dtype);
    if (z > 1 && call->bytes % z != 0)
        return ub_io_fail(c, "calls[%d].bytes: %llu is not a whole number of %s elements (%llu bytes each)", k,
                          (unsigned long long)call->bytes, ub_dtype_name(call->dtype), (unsigned long long)z);
    if ((f = json_object_get(v, "merge"))) {
        if (!json_is_boolean(f))
            return ub_io_fail(c, "calls[%d].merge: must be true or false, got %s", k, ub_json_describe(f).text);
        call->merge = json_is_true(f);
    }
    if ((f = json_object_get(v, "measured_comm"))) {
        snprintf(path, sizeof(path), "calls[%d].measured_comm", k);
        if (want_finite(c, f, path, 0.0, &call->measured_comm))
            return -1;
    }
    return 0;
}

int ub_profile_from_json(const json_t *root, const char *origin, ub_profile *out, char *err, size_t errlen)
{
    const ub_io_where c = {origin ? origin : "<profile>", err, errlen};
    memset(out, 0, sizeof(*out));
    if (!json_is_object(root))
        return ub_io_fail(&c, "top level: must be an object, got %s", ub_json_describe(root).text);
    const json_t *f = json_object_get(root, "usbyte_profile");
    if (!f)
        return ub_io_fail(&c, "usbyte_profile: missing (not a usbyte profile)");
    if (!json_is_integer(f) || json_integer_value(f) != 1)
        return ub_io_fail(&c, "usbyte_profile: unsupported version %s (expected 1)", ub_json_describe(f).text);
    if ((f = json_object_get(root, "name")) && want_string(&c, f, "name", &out->name))
        goto bad;
    if ((f = json_object_get(root, "source")) && want_string(&c, f, "source", &out->source))
        goto bad;
    if ((f = json_object_get(root, "ranks"))) {
        if (!json_is_integer(f) || json_integer_value(f) < 1 || json_integer_value(f) > 1000000000) {
            ub_io_fail(&c, "ranks: must be a positive integer, got %s", ub_json_describe(f).text);
            goto bad;
        }
        out->ranks = (int)json_integer_value(f);
    }
    if ((f = json_object_get(root, "net")) && parse_net(&c, f, out))
        goto bad;
    if ((f = json_object_get(root, "align")) && want_bytes(&c, f, "align", &out->align))
        goto bad;
    if ((f = json_object_get(root, "staging_max")) && want_bytes(&c, f, "staging_max", &out->staging_max))
        goto bad;
    f = json_object_get(root, "backward_end");
    if (!f) {
        ub_io_fail(&c, "backward_end: missing (seconds from backward start to its end)");
        goto bad;
    }
    if (want_finite(&c, f, "backward_end", 0.0, &out->backward_end))
        goto bad;
    if ((f = json_object_get(root, "gap")) && want_finite(&c, f, "gap", 0.0, &out->gap))
        goto bad;
    if ((f = json_object_get(root, "interference")) && want_finite(&c, f, "interference", 0.0, &out->interference))
        goto bad;
    char why[120];
    if (ub_interference_check(out->interference, why, sizeof why) != 0) {
        ub_io_fail(&c, "interference: %s", why);
        goto bad;
    }

    f = json_object_get(root, "forward");
    if (f) {
        if (!json_is_array(f) || json_array_size(f) == 0 || json_array_size(f) > MAX_ENTRIES) {
            ub_io_fail(&c, "forward: must be a non-empty array of seconds, got %s", ub_json_describe(f).text);
            goto bad;
        }
        out->n_forward = (int)json_array_size(f);
    } else {
        out->n_forward = 1;
    }
    out->forward = calloc((size_t)out->n_forward, sizeof(double));
    if (!out->forward) {
        ub_io_fail(&c, "forward: out of memory");
        goto bad;
    }
    for (int s = 0; f && s < out->n_forward; s++) {
        char path[48];
        snprintf(path, sizeof(path), "forward[%d]", s);
        if (want_finite(&c, json_array_get(f, (size_t)s), path, 0.0, &out->forward[s]))
            goto bad;
    }

    f = json_object_get(root, "calls");
    if (!f) {
        ub_io_fail(&c, "calls: missing");
        goto bad;
    }
    if (!json_is_array(f) || json_array_size(f) == 0 || json_array_size(f) > MAX_ENTRIES) {
        ub_io_fail(&c, "calls: must be a non-empty array of calls, got %s", ub_json_describe(f).text);
        goto bad;
    }
    int n = (int)json_array_size(f);
    out->calls = calloc((size_t)n, sizeof(ub_call));
    if (!out->calls) {
        ub_io_fail(&c, "calls: out of memory for %d calls", n);
        goto bad;
    }
    out->n_calls = n;
    for (int k = 0; k < n; k++)
        if (parse_call(&c, json_array_get(f, (size_t)k), k, out))
            goto bad;
    return 0;
bad:
    ub_profile_free(out);
    return -1;
}

/* A usbyte report embeds one agreed profile per communicator (comms[i].profile), so that a
 * profile measured on a GPU cluster replays unchanged: pick the one asked for, or the first. */
static const json_t *report_profile(const json_t *root, const char *path, int comm, char *origin,
                                    size_t origin_len, char *err, size_t errlen)
{
    const ub_io_where w = {path, err, errlen};
    const json_t *ver = json_object_get(root, "usbyte_report");
    if (!json_is_integer(ver) || json_integer_value(ver) != 1) {
        ub_io_fail(&w, "usbyte_report: unsupported version %s (expected 1)", ub_json_describe(ver).text);
        return NULL;
    }
    const json_t *comms = json_object_get(root, "comms");
    if (!json_is_array(comms)) {
        ub_io_fail(&w, "comms: a usbyte report needs an array of communicators");
        return NULL;
    }
    size_t n = json_array_size(comms);
    if (comm >= 0 && (size_t)comm >= n) {
        ub_io_fail(&w, "comms[%d]: the report has %zu communicator(s)", comm, n);
        return NULL;
    }
    for (size_t i = comm >= 0 ? (size_t)comm : 0; i < n; i++) {
        const json_t *c = json_array_get(comms, i);
        const json_t *prof = json_object_get(c, "profile");
        if (json_is_object(prof)) {
            snprintf(origin, origin_len, "%s: comms[%zu].profile", path, i);
            return prof;
        }
        if (comm >= 0) {
            const char *state = json_string_value(json_object_get(c, "state"));
            ub_io_fail(&w, "comms[%d].profile: none (state \"%s\": the communicator was not planned)",
                       comm, state ? state : "?");
            return NULL;
        }
    }
    ub_io_fail(&w, "comms: no communicator of this report has a profile (none was planned)");
    return NULL;
}

int ub_profile_load_comm(const char *path, int comm, ub_profile *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    json_t *root = ub_json_load_file(path, err, errlen);
    if (!root)
        return -1;
    int rc = -1;
    char origin[1024];
    const json_t *prof = root;
    snprintf(origin, sizeof(origin), "%s", path);
    const ub_io_where w = {path, err, errlen};
    if (json_object_get(root, "usbyte_report"))
        prof = report_profile(root, path, comm, origin, sizeof(origin), err, errlen);
    else if (comm >= 0) {
        ub_io_fail(&w, "a communicator index applies to a usbyte report, and this is not one");
        prof = NULL;
    }
    if (prof)
        rc = ub_profile_from_json(prof, origin, out, err, errlen);
    json_decref(root);
    return rc;
}

int ub_profile_load(const char *path, ub_profile *out, char *err, size_t errlen)
{
    return ub_profile_load_comm(path, -1, out, err, errlen);
}

/* json_object_set_new that reports failure instead of leaking silently. */
static int put(json_t *obj, const char *key, json_t *v)
{
    return v ? json_object_set_new(obj, key, v) : -1;
}

static json_t *net_to_json(const ub_profile *p)
{
    json_t *net = json_pack("{s:f, s:f, s:f}", "alpha", p->alpha, "beta", p->beta, "copy_beta", p->copy_beta);
    if (!net || p->curve.n <= 0)
        return net;
    json_t *segs = json_array();
    int bad = !segs;
    for (int i = 0; i < p->curve.n && !bad; i++) {
        const ub_net_segment *g = &p->curve.seg[i];
        bad |= json_array_append_new(segs, json_pack("{s:f, s:f, s:f}", "from", g->from, "alpha", g->alpha, "beta",
                                                     g->beta));
    }
    if (bad || put(net, "segments", segs)) {
        json_decref(net);
        return NULL;
    }
    return net;
}

json_t *ub_profile_to_json(const ub_profile *p)
{
    json_t *root = json_object();
    json_t *fwd = json_array(), *calls = json_array();
    int bad = !root || !fwd || !calls;
    if (!bad) {
        bad |= put(root, "usbyte_profile", json_integer(1));
        if (p->name)
            bad |= put(root, "name", json_string(p->name));
        if (p->source)
            bad |= put(root, "source", json_string(p->source));
        if (p->ranks > 0)
            bad |= put(root, "ranks", json_integer(p->ranks));
        if (p->has_net)
            bad |= put(root, "net", net_to_json(p));
        if (p->align)
            bad |= put(root, "align", json_integer((json_int_t)p->align));
        if (p->staging_max)
            bad |= put(root, "staging_max", json_integer((json_int_t)p->staging_max));
        bad |= put(root, "backward_end", json_real(p->backward_end));
        bad |= put(root, "gap", json_real(p->gap));
        if (p->interference > 0.0)
            bad |= put(root, "interference", json_real(p->interference));
        for (int s = 0; s < p->n_forward; s++)
            bad |= json_array_append_new(fwd, json_real(p->forward[s]));
        for (int k = 0; k < p->n_calls && !bad; k++) {
            const ub_call *c = &p->calls[k];
            json_t *o = json_object();
            if (!o) {
                bad = 1;
                break;
            }
            if (c->name)
                bad |= put(o, "name", json_string(c->name));
            bad |= put(o, "bytes", json_integer((json_int_t)c->bytes));
            bad |= put(o, "ready", json_real(c->ready));
            bad |= put(o, "need", json_integer(c->need));
            bad |= put(o, "dtype", json_string(ub_dtype_name(c->dtype)));
            bad |= put(o, "op", json_string(ub_op_name(c->op)));
            bad |= put(o, "merge", json_boolean(c->merge));
            if (c->measured_comm >= 0)
                bad |= put(o, "measured_comm", json_real(c->measured_comm));
            bad |= json_array_append_new(calls, o);
        }
    }
    if (!bad) {
        bad |= json_object_set_new(root, "forward", fwd);
        fwd = NULL;
        bad |= json_object_set_new(root, "calls", calls);
        calls = NULL;
    }
    json_decref(fwd);
    json_decref(calls);
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

int ub_profile_save(const char *path, const ub_profile *prof, char *err, size_t errlen)
{
    const ub_io_where c = {path ? path : "<profile>", err, errlen};
    json_t *root = ub_profile_to_json(prof);
    if (!root)
        return ub_io_fail(&c, "out of memory building the profile JSON");
    int rc = ub_write_json_atomic(path, root, JSON_INDENT(1) | JSON_REAL_PRECISION(17), err, errlen);
    json_decref(root);
    return rc;
}

void ub_profile_free(ub_profile *p)
{
    if (!p)
        return;
    for (int k = 0; p->calls && k < p->n_calls; k++)
        free(p->calls[k].name);
    free(p->calls);
    free(p->forward);
    free(p->name);
    free(p->source);
    memset(p, 0, sizeof(*p));
}

static int dup_string(char **dst, const char *src)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -1;
}

int ub_profile_copy(ub_profile *dst, const ub_profile *src)
{
    *dst = *src;
    dst->name = dst->source = NULL;
    dst->forward = NULL;
    dst->calls = NULL;
    dst->n_calls = 0;
    if (dup_string(&dst->name, src->name) || dup_string(&dst->source, src->source))
        goto oom;
    dst->forward = malloc(sizeof(double) * (size_t)(src->n_forward > 0 ? src->n_forward : 1));
    if (!dst->forward)
        goto oom;
    if (src->n_forward > 0)
        memcpy(dst->forward, src->forward, sizeof(double) * (size_t)src->n_forward);
    if (src->n_calls > 0) {
        dst->calls = calloc((size_t)src->n_calls, sizeof(ub_call));
        if (!dst->calls)
            goto oom;
        dst->n_calls = src->n_calls;
        for (int k = 0; k < src->n_calls; k++) {
            dst->calls[k] = src->calls[k];
            if (dup_string(&dst->calls[k].name, src->calls[k].name))
                goto oom;
        }
    }
    return 0;
oom:
    ub_profile_free(dst);
    return -1;
}
