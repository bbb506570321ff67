/* Library versions, read from the libraries themselves at run time (what is linked, not what was built). */
#include "util/versions.h"

#include <cblas.h>
#include <czmq.h>
#include <hdf5.h>
#include <protobuf-c/protobuf-c.h>
#include <sqlite3.h>
#include <stdio.h>
#include <yaml.h>

#ifndef VB_GIT_REV
#define VB_GIT_REV "unknown"
#endif

const char *vb_git_revision(void) { return VB_GIT_REV; }

size_t vb_versions_collect(vb_kv *out, size_t cap) {
    static char zmq[32], hdf5[32], czmq[32];
    int a, b, c;
    zmq_version(&a, &b, &c);
    snprintf(zmq, sizeof zmq, "%d.%d.%d", a, b, c);
    unsigned ha, hb, hc;
    H5get_libversion(&ha, &hb, &hc);
    snprintf(hdf5, sizeof hdf5, "%u.%u.%u", ha, hb, hc);
    snprintf(czmq, sizeof czmq, "%d.%d.%d", CZMQ_VERSION_MAJOR, CZMQ_VERSION_MINOR, CZMQ_VERSION_PATCH);
    vb_kv all[] = {
        {"vbench.git_revision", VB_GIT_REV},
        {"lib.zmq", zmq},
        {"lib.czmq", czmq},
        {"lib.protobuf-c", protobuf_c_version()},
        {"lib.sqlite", sqlite3_libversion()},
        {"lib.hdf5", hdf5},
        {"lib.yaml", yaml_get_version_string()},
        {"lib.openblas", openblas_get_config()},
    };
    size_t n = 0;
    for (; n < sizeof all / sizeof all[0] && n < cap; n++) out[n] = all[n];
    return n;
}
