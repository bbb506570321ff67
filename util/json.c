/* JSON values through jansson (json.h). */
#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when p does not start one (overlong forms, surrogates and
 * code points above U+10FFFF are not valid). */
static int utf8_seq(const unsigned char *p) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    int len = c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    for (int i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if (len == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0))) return 0;
    if (len == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90))) return 0;
    return len;
}

json_t *vb_json_string(const char *s) {
    if (!s) s = "";
    size_t n = strlen(s);
    char *fixed = malloc(n * 3 + 1);   /* each bad byte becomes the 3 bytes of U+FFFD */
    if (!fixed) return NULL;
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int len = utf8_seq(p);
        if (len > 0) {
            memcpy(fixed + o, p, (size_t)len);
            o += (size_t)len;
            p += len;
        } else {
            memcpy(fixed + o, "\xef\xbf\xbd", 3);
            o += 3;
            p++;
        }
    }
    json_t *v = json_stringn(fixed, o);
    free(fixed);
    return v;
}

json_t *vb_json_number(const char *text) {
    if (!text || !*text) return NULL;
    char *end;
    if (!strpbrk(text, ".eE")) {
        errno = 0;
        long long i = strtoll(text, &end, 10);
        if (errno == 0 && *end == '\0') return json_integer((json_int_t)i);
    }
    errno = 0;
    double d = strtod(text, &end);
    if (errno != 0 || *end != '\0' || !isfinite(d)) return NULL;
    return json_real(d);
}

/* The fewest significant digits (1-17) that give back every real in v. */
static int digits_needed(const json_t *v) {
    int need = 1;
    if (json_is_real(v)) {
        double d = json_real_value(v);
        char buf[40];
        for (need = 1; need < 17; need++) {
            snprintf(buf, sizeof buf, "%.*g", need, d);
            if (strtod(buf, NULL) == d) break;
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            int n = digits_needed(json_array_get(v, i));
            if (n > need) need = n;
        }
    } else if (json_is_object(v)) {
        const char *key;
        json_t *item;
        json_object_foreach((json_t *)v, key, item) {
            int n = digits_needed(item);
            if (n > need) need = n;
        }
    }
    return need;
}

char *vb_json_dumps(const json_t *v, size_t flags) {
    return json_dumps(v, flags | JSON_REAL_PRECISION(digits_needed(v)));
}
