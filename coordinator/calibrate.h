/* The calibration probe: rates measured on this host before a long campaign is estimated (issue 36.6).
 *
 * On a host with no history the estimate takes default rates (coordinator/estimate.c), which were 7x off for a
 * real-data campaign on a faster host (29 min estimated, 4 min taken): an unattended campaign of 40 hours cannot
 * be planned with that. So before such a campaign starts, each engine configuration without a measurement near
 * the campaign's dimension on this host is probed: a small campaign of its own (PROBE_ROWS synthetic rows at the
 * campaign's dimension and metric, the profile's build settings, one recall-sweep point at ef_search 100, one
 * filtered point and a short churn when the campaign has those phases) run by this same program
 * (`vbench run --profile PROBE.yml --no-probe`) into FILE.probe.sqlite beside the results. Its end appends its
 * rates to the history like any campaign (coordinator/history.h), marked by its campaign name "probe-NAME", and
 * the estimate then reads them ("probed here ..., scaled to N rows") for the engines it probed, while the others
 * say they are measured or default.
 *
 * When: `vbench run --probe` always (for the engines that need it), `--no-probe` never, and by default only when
 * the estimate from default rates is longer than VB_CALIBRATE_AUTO_S: a campaign of minutes is not worth a probe
 * (nor the tests' many short campaigns). `vbench run --check` says which engines a run would probe. */
#ifndef VB_COORDINATOR_CALIBRATE_H
#define VB_COORDINATOR_CALIBRATE_H

#include <stddef.h>
#include <stdio.h>

#include "config/plan.h"
#include "config/profile.h"
#include "coordinator/campaign.h"
#include "util/error.h"

#define VB_CALIBRATE_AUTO_S 600.0   /* default-rate estimates longer than this are probed first */
#define VB_CALIBRATE_ROWS 5000      /* rows of the probe's corpus */

typedef enum { VB_PROBE_AUTO = 0, VB_PROBE_ALWAYS = 1, VB_PROBE_NEVER = 2 } vb_probe_mode;

/* The entries (comma-separated entry names, for --engines) with a configuration that has no rate measured on this
 * host within a factor 2 of a dataset's dimension, into buf ("" when none). Returns how many configurations. */
size_t vb_calibrate_needed(const vb_profile *p, const vb_plan *plan, const char *cache_dir, char *buf, size_t len);

/* The probe's profile text: the campaign's entries named in `entries`, its top-level settings (k, resources,
 * limits, ...), one synthetic dataset per distinct dimension and metric of its datasets, and the phases above.
 * Returns a malloc'd NUL-terminated YAML text (the caller frees), or NULL with err set. */
char *vb_calibrate_profile_text(const vb_profile *p, const char *entries, const char *cache_dir, vb_error *err);

/* Decides (mode, the default-rate estimate) and runs the probe when needed, saying what it does on `say` (NULL:
 * quiet). *summary gets a line for the manifest ("" when nothing was probed). VB_OK also when the probe failed:
 * the campaign goes on with the estimate it can make, and the summary says why (a probe is never a reason not
 * to measure). */
int vb_calibrate_before_run(const vb_campaign_opts *o, const vb_profile *p, const vb_plan *plan, vb_probe_mode mode,
                            FILE *say, char *summary, size_t summary_len);

#endif
