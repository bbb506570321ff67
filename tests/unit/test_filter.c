/* Self-test of engines/filter.c: the predicates' names and kinds, each kind written in every language the
 * adapters speak (SQL, a Redis vector-set FILTER expression, a valkey-search query, the key), which rows pass, and
 * the class a query filters on under label_own / label_other / class. */
#include <stdio.h>
#include <string.h>

#include "datasets/dataset.h"
#include "engines/filter.h"
#include "tests/tap.h"

static char buf[128];

/* The filter f in each language, checked against the wanted texts (NULL: not checked). */
static void texts(const vb_filter *f, const char *text, const char *sql, const char *redis, const char *valkey,
                  const char *key) {
    char name[160];
    snprintf(name, sizeof name, "%s: text", text);
    is_str(vb_filter_text(f, buf, sizeof buf) == 0 ? buf : "(failed)", text, name);
    snprintf(name, sizeof name, "%s: SQL", text);
    is_str(vb_filter_sql(f, buf, sizeof buf) == 0 ? buf : "(failed)", sql, name);
    snprintf(name, sizeof name, "%s: Redis FILTER expression", text);
    is_str(vb_filter_redis_expr(f, buf, sizeof buf) == 0 ? buf : "(failed)", redis, name);
    snprintf(name, sizeof name, "%s: valkey-search query", text);
    is_str(vb_filter_valkey_query(f, buf, sizeof buf) == 0 ? buf : "(failed)", valkey, name);
    snprintf(name, sizeof name, "%s: key", text);
    is_str(vb_filter_key(f, buf, sizeof buf) == 0 ? buf : "(failed)", key, name);
}

static void test_predicates(void) {
    static const char *const names[] = {"range", "equality", "and", "label_own", "label_other", "class"};
    for (int i = 0; i < 6; i++) {
        char name[64];
        snprintf(name, sizeof name, "predicate %s parses to %d and back", names[i], i + 1);
        ok(vb_filter_predicate_parse(names[i]) == i + 1 && strcmp(vb_filter_predicate_name(i + 1), names[i]) == 0,
           "%s", name);
    }
    is_int(vb_filter_predicate_parse("label"), -1, "an unknown predicate is -1");
    ok(vb_filter_predicate_name(0) == NULL && vb_filter_predicate_name(7) == NULL, "no name outside 1 .. 6");
    ok(vb_filter_predicate_kind(VB_PRED_RANGE) == VB_FILTER_TAG_BELOW &&
           vb_filter_predicate_kind(VB_PRED_EQUALITY) == VB_FILTER_LABEL_EQ &&
           vb_filter_predicate_kind(VB_PRED_AND) == VB_FILTER_AND,
       "the synthetic-column predicates search with their own kinds");
    ok(vb_filter_predicate_kind(VB_PRED_LABEL_OWN) == VB_FILTER_CLASS_EQ &&
           vb_filter_predicate_kind(VB_PRED_LABEL_OTHER) == VB_FILTER_CLASS_EQ &&
           vb_filter_predicate_kind(VB_PRED_CLASS) == VB_FILTER_CLASS_EQ,
       "the three class predicates all search with the class kind");
    ok(!vb_filter_predicate_is_class(VB_PRED_RANGE) && !vb_filter_predicate_is_class(VB_PRED_AND) &&
           vb_filter_predicate_is_class(VB_PRED_LABEL_OWN) && vb_filter_predicate_is_class(VB_PRED_CLASS),
       "is_class tells the per-query predicates from the others");
    is_str(vb_filter_kind_name(VB_FILTER_CLASS_EQ), "class", "the class kind's name");
    ok(vb_filter_kind_flag(VB_FILTER_CLASS_EQ) == VB_ENGINE_FILTER_CLASS, "the class kind's engine flag");
    vb_filter f;
    double share;
    vb_error err;
    ok(vb_filter_make(VB_FILTER_CLASS_EQ, 0.1, &f, &share, &err) == VB_ERROR && strstr(err.message, "per query"),
       "the class kind is not made from a selectivity (%s)", err.message);
}

static void test_languages(void) {
    vb_filter range = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 100};
    texts(&range, "tag < 100", "tag < 100", ".tag < 100", "@tag:[-inf (100]", "tag<100");
    vb_filter eq = {.kind = VB_FILTER_LABEL_EQ, .label = 3};
    texts(&eq, "label = 3", "label = 3", ".label == 3", "@label:[3 3]", "label=3");
    vb_filter both = {.kind = VB_FILTER_AND, .tag_below = 316, .tag2_below = 317};
    texts(&both, "tag < 316 AND tag2 < 317", "tag < 316 AND tag2 < 317", ".tag < 316 and .tag2 < 317",
          "@tag:[-inf (316] @tag2:[-inf (317]", "tag<316&tag2<317");
    vb_filter cls = vb_filter_class(7);
    ok(cls.kind == VB_FILTER_CLASS_EQ && cls.cls == 7, "vb_filter_class makes class = 7");
    texts(&cls, "class = 7", "class = 7", ".class == 7", "@class:[7 7]", "class=7");
    char small[6];
    is_int(vb_filter_sql(&cls, small, sizeof small), -1, "a buffer too small is an error, not a cut predicate");
}

static void test_passes(void) {
    vb_filter cls = vb_filter_class(4);
    ok(vb_filter_passes_attrs(&cls, 0, 0, 0, 4), "a row of class 4 passes class = 4");
    ok(!vb_filter_passes_attrs(&cls, 0, 0, 0, 5), "a row of class 5 does not");
    ok(!vb_filter_passes_attrs(&cls, 0, 0, 0, -1), "a row without a class (-1) never passes a class filter");
    vb_filter none = vb_filter_class(-1);
    ok(!vb_filter_passes_attrs(&none, 0, 0, 0, -1), "not even class = -1");
    /* class and the synthetic columns are independent: a class filter ignores tag, tag2 and label */
    size_t agree = 0;
    for (int64_t id = 0; id < 1000; id++)
        agree += vb_filter_passes(&cls, id, (int32_t)(id % 10)) == (id % 10 == 4);
    is_int(agree, 1000, "vb_filter_passes with the row's class: exactly the rows of class 4 of 1000");
    vb_filter range = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 1000};
    size_t same = 0;
    for (int64_t id = 0; id < 1000; id++)
        same += vb_filter_passes(&range, id, 4) == (vb_dataset_tag(id) < 1000);
    is_int(same, 1000, "a range filter ignores the class: tag < 1000 as before");
}

static void test_classes_for(void) {
    is_int(vb_filter_class_for(VB_PRED_LABEL_OWN, 6, 0, 10, 123, 1), 6, "label_own: the query's own class");
    is_int(vb_filter_class_for(VB_PRED_CLASS, 6, 2, 10, 123, 1), 2, "class: the fixed class, whatever the query's");
    is_int(vb_filter_class_for(VB_PRED_LABEL_OWN, -1, 0, 10, 0, 1), -1, "a query without a class has none to own");
    is_int(vb_filter_class_for(VB_PRED_LABEL_OTHER, 0, 0, 1, 0, 1), -1, "label_other with one class: none");
    /* label_other: never the own class, every other class about as often, the same with the same seed */
    size_t seen[10] = {0}, own = 0, stable = 0, moved = 0;
    for (uint64_t q = 0; q < 9000; q++) {
        int32_t c = vb_filter_class_for(VB_PRED_LABEL_OTHER, (int32_t)(q % 10), 0, 10, q, 1);
        own += c == (int32_t)(q % 10);
        if (c >= 0 && c < 10 && q % 10 == 3) seen[c]++;
        stable += c == vb_filter_class_for(VB_PRED_LABEL_OTHER, (int32_t)(q % 10), 0, 10, q, 1);
        moved += c != vb_filter_class_for(VB_PRED_LABEL_OTHER, (int32_t)(q % 10), 0, 10, q, 2);
    }
    is_int(own, 0, "label_other: no query gets its own class (9000 queries, 10 classes)");
    is_int(seen[3], 0, "label_other: queries of class 3 never filter on 3");
    int even = 1;
    for (int c = 0; c < 10; c++)
        if (c != 3 && (seen[c] < 60 || seen[c] > 140)) even = 0;
    ok(even, "label_other: the other nine classes each about 1/9 of 900 (%zu %zu %zu %zu %zu %zu %zu %zu %zu)", seen[0],
       seen[1], seen[2], seen[4], seen[5], seen[6], seen[7], seen[8], seen[9]);
    is_int(stable, 9000, "label_other: the same class for the same query and seed");
    ok(moved > 6000, "label_other: another seed chooses another class for most queries (%zu of 9000)", moved);
}

int main(void) {
    test_predicates();
    test_languages();
    test_passes();
    test_classes_for();
    return done_testing();
}
