/* Datasets from Debian packages (datasets/registry.h vb_registry_package: Debian's dataset-fashion-mnist): whether
 * the package's files are here, its installed version, whether apt can install it, and installing it with apt-get
 * (as root; otherwise the one command that does). `vbench dataset fetch`, `vbench dataset list` and `vbench run` for
 * a registry dataset use these; the manifest records the version and the files' checksums. */
#ifndef VB_DATASETS_PACKAGE_H
#define VB_DATASETS_PACKAGE_H

#include <stddef.h>
#include <stdio.h>

#include "datasets/registry.h"
#include "util/error.h"

/* 1 when every file of the package is in its directory (installed), else 0. */
int vb_package_here(const vb_registry_package *p);
/* The installed version (dpkg-query), into buf; 0, or -1 when the package is not installed ("" in buf). */
int vb_package_version(const vb_registry_package *p, char *buf, size_t len);
/* 1 when apt knows a version it could install (apt-cache policy: a Candidate that is not "(none)"), else 0. */
int vb_package_installable(const vb_registry_package *p);
/* The command that installs it: "apt-get install -y NAME". */
void vb_package_install_command(const vb_registry_package *p, char *buf, size_t len);
/* Installs the package with apt-get (non-interactive; apt's output goes to `say`'s descriptor, stderr when NULL)
 * and checks that its files are here. Not root: VB_ERROR naming the command to run as root. */
int vb_package_install(const vb_registry_package *p, FILE *say, vb_error *err);
/* The path of the package's file i (dir/file). */
void vb_package_file_path(const vb_registry_package *p, size_t i, char *buf, size_t len);

#endif
