/* Plans in the docs/model.md JSON format.  Reading checks the shape only; whether a plan covers a
 * profile is decided by ub_plan_validate, which knows the profile. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_io_util.h"
#include "usbyte/atomic_write.h"
#include "usbyte/io.h"

/* Optional finite number; absent leaves *out unchanged. */
static int opt_number(const ub_io_where *c, const json_t *obj, const char *key, const char *where, double *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return ub_io_fail(c, "%s%s: must be a finite number, got %s", where, key, ub_json_kind(v));
    *out = json_number_value(v);
    return 0;
}

int ub_plan_from_json(const json_t *root, const char *origin, ub_plan *out, char *err, size_t errlen)
{
    const ub_io_where at = {origin ? origin : "<plan>", err, errlen}, *c = &at;
    ub_plan_clear(out);
    out->policy[0] = '\0';
    if (!json_is_object(root))
        return ub_io_fail(c, "top level: must be an object, got %s", ub_json_kind(root));
    const json_t *f = json_object_get(root, "usbyte_plan");
    if (!f)
        return ub_io_fail(c, "usbyte_plan: missing (not a usbyte plan)");
    if (!json_is_integer(f) || json_integer_value(f) != 1)
        return ub_io_fail(c, "usbyte_plan: unsupported version (expected 1)");
    if ((f = json_object_get(root, "policy"))) {
        if (!json_is_string(f))
            return ub_io_fail(c, "policy: must be a string, got %s", ub_json_kind(f));
        snprintf(out->policy, sizeof(out->policy), "%s", json_string_value(f));
    }
    if ((f = json_object_get(root, "params"))) {
        if (!json_is_string(f))
            return ub_io_fail(c, "params: must be a string, got %s", ub_json_kind(f));
        snprintf(out->params, sizeof(out->params), "%s", json_string_value(f));
    }
    if (opt_number(c, root, "iteration", "", &out->iteration) ||
        opt_number(c, root, "lower_bound", "", &out->lower_bound) ||
        opt_number(c, root, "plan_seconds", "", &out->plan_seconds))
        return -1;
    if ((f = json_object_get(root, "optimal"))) {
        if (!json_is_boolean(f))
            return ub_io_fail(c, "optimal: must be true or false, got %s", ub_json_kind(f));
        out->optimal = json_is_true(f);
    }
    const json_t *blocks = json_object_get(root, "blocks");
    if (!blocks)
        return ub_io_fail(c, "blocks: missing");
    if (!json_is_array(blocks))
        return ub_io_fail(c, "blocks: must be an array, got %s", ub_json_kind(blocks));
    if (json_array_size(blocks) >= UINT32_MAX / 2)
        return ub_io_fail(c, "blocks: too many blocks");
    size_t index;
    const json_t *b;
    json_array_foreach(blocks, index, b) {
        if (!json_is_object(b))
            return ub_io_fail(c, "blocks[%zu]: must be an object, got %s", index, ub_json_kind(b));
        const json_t *segs = json_object_get(b, "segments");
        if (!segs)
            return ub_io_fail(c, "blocks[%zu].segments: missing", index);
        if (!json_is_array(segs) || json_array_size(segs) == 0)
            return ub_io_fail(c, "blocks[%zu].segments: must be a non-empty array, got %s", index,
                              json_is_array(segs) ? "an empty array" : ub_json_kind(segs));
        if ((uint64_t)out->n_segments + json_array_size(segs) >= UINT32_MAX / 2)
            return ub_io_fail(c, "blocks[%zu].segments: too many segments", index);
        char where[64];
        snprintf(where, sizeof(where), "blocks[%zu].", index);
        double start = 0.0, end = 0.0;
        if (opt_number(c, b, "start", where, &start) || opt_number(c, b, "end", where, &end))
            return -1;
        ub_plan_begin_block(out);
        out->blocks[out->n_blocks - 1].start = start;
        out->blocks[out->n_blocks - 1].end = end;
        size_t si;
        const json_t *s;
        json_array_foreach(segs, si, s) {
            if (!json_is_array(s) || json_array_size(s) != 3)
                return ub_io_fail(c, "blocks[%zu].segments[%zu]: must be [call, offset_bytes, length_bytes], got %s",
                                  index, si, ub_json_kind(s));
            static const char *const what[3] = {"call", "offset", "length"};
            json_int_t v[3];
            for (int i = 0; i < 3; i++) {
                const json_t *x = json_array_get(s, (size_t)i);
                if (!json_is_integer(x))
                    return ub_io_fail(c, "blocks[%zu].segments[%zu][%d] (%s): must be an integer, got %s", index,
                                      si, i, what[i], ub_json_kind(x));
                v[i] = json_integer_value(x);
            }
            if (v[0] < 0 || v[0] > INT32_MAX)
                return ub_io_fail(c, "blocks[%zu].segments[%zu][0] (call): must be a call index >= 0, got %lld",
                                  index, si, (long long)v[0]);
            if (v[1] < 0)
                return ub_io_fail(c, "blocks[%zu].segments[%zu][1] (offset): must be >= 0, got %lld", index, si,
                                  (long long)v[1]);
            if (v[2] <= 0)
                return ub_io_fail(c, "blocks[%zu].segments[%zu][2] (length): must be > 0, got %lld", index, si,
                                  (long long)v[2]);
            ub_plan_add_segment(out, (int32_t)v[0], (uint64_t)v[1], (uint64_t)v[2]);
        }
    }
    return 0;
}

int ub_plan_load(const char *path, ub_plan *out, char *err, size_t errlen)
{
    json_t *root = ub_json_load_file(path, err, errlen);
    if (!root) {
        ub_plan_clear(out);
        return -1;
    }
    int rc = ub_plan_from_json(root, path, out, err, errlen);
    json_decref(root);
    return rc;
}

json_t *ub_plan_to_json(const ub_plan *plan)
{
    json_t *root = json_pack("{s:i, s:s, s:f, s:f, s:f}", "usbyte_plan", 1, "policy", plan->policy, "iteration",
                             plan->iteration, "lower_bound", plan->lower_bound, "plan_seconds", plan->plan_seconds);
    json_t *blocks = json_array();
    if (!root || !blocks)
        goto oom;
    if (plan->params[0] && json_object_set_new(root, "params", json_string(plan->params)))
        goto oom;
    if (json_object_set_new(root, "optimal", json_boolean(plan->optimal)))
        goto oom;
    for (uint32_t b = 0; b < plan->n_blocks; b++) {
        const ub_block *blk = &plan->blocks[b];
        json_t *segs = json_array();
        if (!segs)
            goto oom;
        for (uint32_t i = 0; i < blk->n_segments; i++) {
            const ub_segment *s = &plan->segments[blk->first_segment + i];
            if (json_array_append_new(segs, json_pack("[i, I, I]", (int)s->call, (json_int_t)s->offset,
                                                      (json_int_t)s->length))) {
                json_decref(segs);
                goto oom;
            }
        }
        if (json_array_append_new(blocks, json_pack("{s:o, s:f, s:f}", "segments", segs, "start", blk->start, "end",
                                                    blk->end)))
            goto oom;
    }
    if (json_object_set_new(root, "blocks", blocks)) {
        blocks = NULL;
        goto oom;
    }
    return root;
oom:
    json_decref(blocks);
    json_decref(root);
    return NULL;
}

int ub_plan_save(const char *path, const ub_plan *plan, char *err, size_t errlen)
{
    ub_io_where c = {path ? path : "<plan>", err, errlen};
    json_t *root = ub_plan_to_json(plan);
    if (!root)
        return ub_io_fail(&c, "out of memory building the plan JSON");
    /* Never through a planted link, never over a non-regular file, never half-written. */
    int rc = ub_write_json_atomic(path, root, JSON_COMPACT | JSON_REAL_PRECISION(17), err, errlen);
    json_decref(root);
    return rc;
}
