/* Test tool: checks a CURVE key pair in czmq's zcert format, as deploy/install makes them (with `vbench keys`, or
 * with openssl and perl when the build has no such command), by loading it with czmq itself.
 *
 *   vb_zcert SECRET.key [PUBLIC.pub]
 *     prints "public=Z85" and exits 0 when czmq loads SECRET.key, its secret key gives (zmq_curve_public) the
 *     public key stored beside it, and PUBLIC.pub, if given, holds that same public key.
 * Exit status: 0 good, 1 bad (the reason on stderr), 2 usage. */
#include <czmq.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: vb_zcert SECRET.key [PUBLIC.pub]\n");
        return 2;
    }
    zcert_t *sec = zcert_load(argv[1]);
    if (!sec) {
        fprintf(stderr, "vb_zcert: czmq cannot load %s\n", argv[1]);
        return 1;
    }
    int rc = 0;
    char derived[41];
    const char *secret = zcert_secret_txt(sec), *stored = zcert_public_txt(sec);
    if (strlen(secret) != 40 || strcmp(secret, "0000000000000000000000000000000000000000") == 0) {
        fprintf(stderr, "vb_zcert: %s holds no secret key\n", argv[1]);
        rc = 1;
    } else if (zmq_curve_public(derived, secret) != 0) {
        fprintf(stderr, "vb_zcert: zmq_curve_public: %s\n", zmq_strerror(zmq_errno()));
        rc = 1;
    } else if (strcmp(derived, stored) != 0) {
        fprintf(stderr, "vb_zcert: %s: the secret key gives %s, the file says %s\n", argv[1], derived, stored);
        rc = 1;
    }
    if (rc == 0 && argc == 3) {
        zcert_t *pub = zcert_load(argv[2]);
        if (!pub || strcmp(zcert_public_txt(pub), stored) != 0) {
            fprintf(stderr, "vb_zcert: %s does not hold the public key of %s\n", argv[2], argv[1]);
            rc = 1;
        }
        zcert_destroy(&pub);
    }
    if (rc == 0) printf("public=%s\n", stored);
    zcert_destroy(&sec);
    return rc;
}
