/* The manifest: what a reader needs to judge or reproduce a campaign, written into the results database.
 * Host (CPU model and flags, kernel, cores, memory), library versions, vbench git revision, the fully resolved
 * profile, the command line. Agents add their own (versions, CPUs) when they say hello; engines add theirs
 * with their build results. Each file dataset: where it came from (a Debian package and its version, a registry
 * download, files), every file it reads with its sha256, and the seeded subset the profile takes of it. */
#ifndef VB_COORDINATOR_MANIFEST_H
#define VB_COORDINATOR_MANIFEST_H

#include "config/profile.h"
#include "store/store.h"

int vb_manifest_record_host(vb_store *s, vb_error *err);
int vb_manifest_record_profile(vb_store *s, const vb_profile *p, const char *command_line, vb_error *err);

#endif
