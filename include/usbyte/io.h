/* Reading, validating and writing profiles and plans in the docs/model.md JSON formats.
 *
 * Every function that can fail writes one line into err (errlen bytes) that names the origin
 * (usually the file name), the JSON path and what is wrong, e.g.
 *   resnet.json: calls[3].bytes: must be a positive integer, got -5
 * and returns -1; on success it returns 0.  Bad input never crashes and never reads out of bounds.
 * The JSON functions exist because the interposer's report embeds profiles in larger documents. */
#ifndef USBYTE_IO_H
#define USBYTE_IO_H

#include <jansson.h>
#include <stddef.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"

/* Profiles ("usbyte_profile": 1).  Defaults of docs/model.md: dtype float32, op sum, merge true,
 * need 0, forward [0], gap 0; measured_comm < 0 when absent; has_net false without "net".
 * Unknown keys are ignored.  `out` is overwritten (not freed first); on failure it is left
 * empty (safe to ub_profile_free). */
int ub_profile_from_json(const json_t *root, const char *origin, ub_profile *out, char *err, size_t errlen);
int ub_profile_load(const char *path, ub_profile *out, char *err, size_t errlen);
/* The same, where the file may also be a usbyte report ("usbyte_report": 1): then the profile
 * of communicator `comm` (comms[comm].profile), or with comm < 0 the first one planned.
 * ub_profile_load(path) is ub_profile_load_comm(path, -1). */
int ub_profile_load_comm(const char *path, int comm, ub_profile *out, char *err, size_t errlen);
/* Every field written explicitly, so that from_json(to_json(p)) == p.  NULL only when out of memory. */
json_t *ub_profile_to_json(const ub_profile *prof);
int ub_profile_save(const char *path, const ub_profile *prof, char *err, size_t errlen);
void ub_profile_free(ub_profile *prof);
/* Deep copy into dst (overwritten, not freed first).  -1 when out of memory (dst left empty). */
int ub_profile_copy(ub_profile *dst, const ub_profile *src);

/* Plans ("usbyte_plan": 1).  from_json checks the shape only (types, integer ranges, non-empty
 * blocks); whether the plan covers a profile's calls is ub_plan_validate's job (usbyte/model.h).
 * `out` must be initialised (ub_plan_init); it is cleared first. */
int ub_plan_from_json(const json_t *root, const char *origin, ub_plan *out, char *err, size_t errlen);
int ub_plan_load(const char *path, ub_plan *out, char *err, size_t errlen);
/* {"usbyte_plan":1, "policy", "iteration", "lower_bound", "plan_seconds", ["params"],
 *  "blocks": [{"segments": [[call, offset, length], ...], "start", "end"}]} */
json_t *ub_plan_to_json(const ub_plan *plan);
int ub_plan_save(const char *path, const ub_plan *plan, char *err, size_t errlen);

/* Reads a whole JSON document from a file with the one-line error conventions above
 * (unreadable file, malformed JSON with line and column, duplicate keys).  NULL on failure. */
json_t *ub_json_load_file(const char *path, char *err, size_t errlen);

#endif
