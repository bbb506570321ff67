/* JSON values through jansson, for code that builds a document from text it did not check for UTF-8 and wants
 * its numbers written as the text it holds (the resolved profile, config/profile.c). With report/json_rows.h
 * this is the one path by which vbench writes JSON: nothing escapes a JSON string by hand. */
#ifndef VB_UTIL_JSON_H
#define VB_UTIL_JSON_H

#include <jansson.h>

/* A JSON string of s; bytes that are not valid UTF-8 become U+FFFD (jansson refuses such a string). Never NULL
 * unless out of memory. */
json_t *vb_json_string(const char *s);
/* A JSON number from canonical decimal text ("16", "0.01", "1e-05"): an integer when the text has no '.', 'e' or
 * 'E' and fits, else a real. NULL when the text is not a finite number. */
json_t *vb_json_number(const char *text);
/* json_dumps(v, flags) with reals written in the fewest digits that give back every real of v (at most 17), so
 * 0.1 stays "0.1" instead of jansson's default "0.10000000000000001". Free with free(). */
char *vb_json_dumps(const json_t *v, size_t flags);

#endif
