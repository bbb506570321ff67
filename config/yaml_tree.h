/* A small YAML tree: what libyaml reads, reduced to maps, sequences and scalars that remember their line.
 *
 * Profiles need nothing more, and keeping the 1-based line on every node is what lets the profile validator say
 * "profiles/x.yml:12: key 'k': ..." for any value. The parser refuses what would make a profile ambiguous:
 * duplicate keys in a map, non-scalar keys, anchors/aliases, more than one document. */
#ifndef VB_CONFIG_YAML_TREE_H
#define VB_CONFIG_YAML_TREE_H

#include <stddef.h>

#include "util/error.h"

typedef enum { VB_YAML_SCALAR = 0, VB_YAML_SEQ, VB_YAML_MAP } vb_yaml_type;

typedef struct vb_yaml_node vb_yaml_node;
struct vb_yaml_node {
    vb_yaml_type type;
    int line;               /* 1-based line where the node starts */
    /* VB_YAML_SCALAR */
    char *text;             /* NUL-terminated value as written (after YAML unquoting/folding) */
    int quoted;             /* 1 when written in quotes or as a block scalar: never null, always a string */
    /* VB_YAML_SEQ: items[0..n); VB_YAML_MAP: keys[i] -> items[i], key_lines[i] is the key's line */
    size_t n, cap;
    vb_yaml_node **items;
    char **keys;
    int *key_lines;
};

/* Parses one YAML document. *out is the root (NULL for an empty document); the caller frees it with
 * vb_yaml_free. Errors are "SOURCE:LINE: problem" with domain "profile". */
int vb_yaml_parse(const char *text, size_t len, const char *source, vb_yaml_node **out, vb_error *err);
void vb_yaml_free(vb_yaml_node *node);   /* NULL-safe, frees the whole subtree */

/* The value for key in a map node, or NULL (also NULL when node is not a map). *index gets its position. */
const vb_yaml_node *vb_yaml_map_get(const vb_yaml_node *map, const char *key, size_t *index);
/* True for a plain scalar that YAML reads as null: empty, "~", "null", "Null", "NULL". */
int vb_yaml_is_null(const vb_yaml_node *node);
/* "a map", "a list", "an empty value" or "'text'" for messages ("expected an integer, got a map"). Writes into
 * buf and returns it. */
const char *vb_yaml_describe(const vb_yaml_node *node, char *buf, size_t len);

#endif
