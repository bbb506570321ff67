/* YAML text to a vb_yaml_node tree, built from libyaml's event stream.
 *
 * The event API (rather than yaml_document_t) lets us reject duplicate keys and aliases at the exact line
 * where they occur and keep the composition logic in one short loop: a stack of open collections, each new
 * node attached to the top one as soon as it is created, so freeing the root always frees everything. */
#include "config/yaml_tree.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YT_MAX_DEPTH 64

static vb_yaml_node *node_new(vb_yaml_type type, int line) {
    vb_yaml_node *n = calloc(1, sizeof *n);
    if (n) {
        n->type = type;
        n->line = line;
    }
    return n;
}

void vb_yaml_free(vb_yaml_node *node) {
    if (!node) return;
    for (size_t i = 0; i < node->n; i++) {
        vb_yaml_free(node->items[i]);
        if (node->keys) free(node->keys[i]);
    }
    free(node->items);
    free(node->keys);
    free(node->key_lines);
    free(node->text);
    free(node);
}

/* Appends a child (and for maps its key, whose ownership moves to the node). 0 or -1 on out of memory. */
static int node_append(vb_yaml_node *parent, char *key, int key_line, vb_yaml_node *child) {
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 4;
        vb_yaml_node **items = realloc(parent->items, cap * sizeof *items);
        if (!items) return -1;
        parent->items = items;
        if (parent->type == VB_YAML_MAP) {
            char **keys = realloc(parent->keys, cap * sizeof *keys);
            if (!keys) return -1;
            parent->keys = keys;
            int *lines = realloc(parent->key_lines, cap * sizeof *lines);
            if (!lines) return -1;
            parent->key_lines = lines;
        }
        parent->cap = cap;
    }
    parent->items[parent->n] = child;
    if (parent->type == VB_YAML_MAP) {
        parent->keys[parent->n] = key;
        parent->key_lines[parent->n] = key_line;
    }
    parent->n++;
    return 0;
}

const vb_yaml_node *vb_yaml_map_get(const vb_yaml_node *map, const char *key, size_t *index) {
    if (!map || map->type != VB_YAML_MAP) return NULL;
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->keys[i], key) == 0) {
            if (index) *index = i;
            return map->items[i];
        }
    return NULL;
}

int vb_yaml_is_null(const vb_yaml_node *node) {
    if (!node || node->type != VB_YAML_SCALAR || node->quoted) return 0;
    const char *t = node->text;
    return t[0] == '\0' || strcmp(t, "~") == 0 || strcmp(t, "null") == 0 || strcmp(t, "Null") == 0 ||
           strcmp(t, "NULL") == 0;
}

const char *vb_yaml_describe(const vb_yaml_node *node, char *buf, size_t len) {
    if (!node || vb_yaml_is_null(node))
        snprintf(buf, len, "an empty value");
    else if (node->type == VB_YAML_MAP)
        snprintf(buf, len, "a map");
    else if (node->type == VB_YAML_SEQ)
        snprintf(buf, len, "a list");
    else if (strlen(node->text) > 40)
        snprintf(buf, len, "'%.40s...'", node->text);
    else
        snprintf(buf, len, "'%s'", node->text);
    return buf;
}

/* The composer's state: the open collections and, for a map on top, the key waiting for its value. */
typedef struct composer {
    const char *source;
    vb_error *err;
    vb_yaml_node *root;
    vb_yaml_node *stack[YT_MAX_DEPTH];
    int depth;
    char *pending_key[YT_MAX_DEPTH];   /* per open map: key read, value not yet */
    int pending_line[YT_MAX_DEPTH];
    int documents;
} composer;

static int fail(composer *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(composer *c, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vb_error_vat(c->err, "profile", c->source, line, fmt, ap);
    va_end(ap);
    return VB_ERROR;
}

/* Attaches a new node where the stream says it belongs. Takes ownership of node in every case. */
static int attach(composer *c, vb_yaml_node *node) {
    if (c->depth == 0) {
        if (c->root) {   /* cannot happen within one document, kept as a guard */
            vb_yaml_free(node);
            return fail(c, node ? node->line : 0, "more than one root node");
        }
        c->root = node;
        return VB_OK;
    }
    vb_yaml_node *top = c->stack[c->depth - 1];
    if (top->type == VB_YAML_SEQ) {
        if (node_append(top, NULL, 0, node) != 0) {
            vb_yaml_free(node);
            return vb_error_set(c->err, "profile", 1, "%s: out of memory", c->source);
        }
        return VB_OK;
    }
    char **pk = &c->pending_key[c->depth - 1];
    if (!*pk) {   /* this node is a key */
        int line = node->line;
        if (node->type != VB_YAML_SCALAR) {
            vb_yaml_free(node);
            return fail(c, line, "map keys must be plain scalars");
        }
        if (vb_yaml_map_get(top, node->text, NULL)) {
            int rc = fail(c, line, "duplicate key '%s'", node->text);
            vb_yaml_free(node);
            return rc;
        }
        *pk = node->text;
        node->text = NULL;
        c->pending_line[c->depth - 1] = line;
        vb_yaml_free(node);
        return VB_OK;
    }
    if (node_append(top, *pk, c->pending_line[c->depth - 1], node) != 0) {
        vb_yaml_free(node);
        return vb_error_set(c->err, "profile", 1, "%s: out of memory", c->source);
    }
    *pk = NULL;
    return VB_OK;
}

static int push(composer *c, vb_yaml_node *node) {
    int line = node->line;
    if (c->depth == YT_MAX_DEPTH) {
        vb_yaml_free(node);
        return vb_error_set(c->err, "profile", 1, "%s:%d: nesting deeper than %d levels", c->source, line,
                            YT_MAX_DEPTH);
    }
    if (attach(c, node) != VB_OK) return VB_ERROR;
    c->stack[c->depth] = node;
    c->pending_key[c->depth] = NULL;
    c->depth++;
    return VB_OK;
}

/* libyaml reader errors (bad UTF-8, NUL bytes) carry a byte offset, not a line: count the newlines. */
static int line_of_offset(const char *text, size_t len, size_t offset) {
    int line = 1;
    for (size_t i = 0; i < offset && i < len; i++)
        if (text[i] == '\n') line++;
    return line;
}

static int syntax_error(composer *c, const yaml_parser_t *parser, const char *text, size_t len) {
    int line = parser->error == YAML_READER_ERROR ? line_of_offset(text, len, parser->problem_offset)
                                                   : (int)parser->problem_mark.line + 1;
    const char *problem = parser->problem ? parser->problem : "invalid YAML";
    if (parser->context)
        return vb_error_set(c->err, "profile", 1, "%s:%d: %s (%s at line %d)", c->source, line, problem,
                            parser->context, (int)parser->context_mark.line + 1);
    return vb_error_set(c->err, "profile", 1, "%s:%d: %s", c->source, line, problem);
}

int vb_yaml_parse(const char *text, size_t len, const char *source, vb_yaml_node **out, vb_error *err) {
    *out = NULL;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return vb_error_set(err, "profile", 1, "%s: out of memory", source);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

    composer c = {.source = source, .err = err};
    int rc = VB_OK, done = 0;
    while (!done && rc == VB_OK) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = syntax_error(&c, &parser, text, len);
            break;
        }
        int line = (int)ev.start_mark.line + 1;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++c.documents > 1) rc = fail(&c, line, "only one YAML document is allowed");
            break;
        case YAML_ALIAS_EVENT:
            rc = fail(&c, line, "alias '*%s': anchors and aliases are not supported",
                      (const char *)ev.data.alias.anchor);
            break;
        case YAML_SCALAR_EVENT: {
            vb_yaml_node *n = node_new(VB_YAML_SCALAR, line);
            char *t = n ? malloc(ev.data.scalar.length + 1) : NULL;
            if (!t) {
                free(n);
                rc = vb_error_set(err, "profile", 1, "%s: out of memory", source);
                break;
            }
            memcpy(t, ev.data.scalar.value, ev.data.scalar.length);
            t[ev.data.scalar.length] = '\0';
            if (strlen(t) != ev.data.scalar.length) {
                free(t);
                free(n);
                rc = fail(&c, line, "NUL character in a value");
                break;
            }
            n->text = t;
            n->quoted = ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
            rc = attach(&c, n);
            break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            vb_yaml_node *n = node_new(ev.type == YAML_MAPPING_START_EVENT ? VB_YAML_MAP : VB_YAML_SEQ, line);
            rc = n ? push(&c, n) : vb_error_set(err, "profile", 1, "%s: out of memory", source);
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (c.depth > 0) c.depth--;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    for (int i = 0; i < c.depth; i++) free(c.pending_key[i]);
    yaml_parser_delete(&parser);
    if (rc != VB_OK) {
        vb_yaml_free(c.root);
        return VB_ERROR;
    }
    *out = c.root;
    return VB_OK;
}
