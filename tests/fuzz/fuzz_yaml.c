/* Fuzz target: the YAML tree builder (config/yaml_tree.c) under the profile loader.
 *
 * fuzz_profile reaches the tree only through the schema, which stops at the first unknown key; this target
 * drives vb_yaml_parse on any text and walks what it returns.
 *
 * Invariants checked beyond the sanitizers: a refused text says "FILE:LINE: ..." with a positive line; every
 * node has a positive line, no map has the same key twice, every key is found again by vb_yaml_map_get, and
 * the tree is no deeper than the parser's limit. */
#include "config/yaml_tree.h"
#include "tests/fuzz/fuzz_util.h"

#define SOURCE "fuzz.yml"

static void walk(const vb_yaml_node *n, int depth) {
    char buf[64];
    FZ_CHECK(depth <= 65, "tree deeper than the nesting limit");
    FZ_CHECK(n->line >= 1, "node at line %d", n->line);
    vb_yaml_describe(n, buf, sizeof buf);
    vb_yaml_is_null(n);
    switch (n->type) {
    case VB_YAML_SCALAR:
        FZ_CHECK(n->text != NULL && n->n == 0, "scalar without text or with children");
        break;
    case VB_YAML_SEQ:
        for (size_t i = 0; i < n->n; i++) walk(n->items[i], depth + 1);
        break;
    case VB_YAML_MAP:
        for (size_t i = 0; i < n->n; i++) {
            size_t at = (size_t)-1;
            FZ_CHECK(n->keys[i] && n->key_lines[i] >= 1, "key %zu", i);
            FZ_CHECK(vb_yaml_map_get(n, n->keys[i], &at) == n->items[i] && at == i, "key '%s' twice in a map",
                     n->keys[i]);
            walk(n->items[i], depth + 1);
        }
        break;
    default:
        FZ_CHECK(0, "node type %d", (int)n->type);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vb_yaml_node *root = NULL;
    vb_error err = {0};
    if (vb_yaml_parse((const char *)data, size, SOURCE, &root, &err) != VB_OK) {
        FZ_CHECK(root == NULL, "a refused text returned a tree");
        FZ_SAY("refused: %s", err.message);
        int line = 0;
        FZ_CHECK(sscanf(err.message, SOURCE ":%d:", &line) == 1 ? line >= 1 : strncmp(err.message, SOURCE ":", 9) == 0,
                 "message without file and line: %s", err.message);
        return 0;
    }
    FZ_SAY("accepted: %s", !root                        ? "an empty document"
                           : root->type == VB_YAML_MAP ? "a map"
                           : root->type == VB_YAML_SEQ ? "a list"
                                                       : "a scalar");
    if (root) walk(root, 1);
    vb_yaml_free(root);
    return 0;
}
