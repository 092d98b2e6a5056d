/* list.h: the one intrusive doubly-linked list (systemd's src/basic/list.h shape): an object
 * carries its links as LIST_FIELDS(Type, name), the owner keeps a head pointer, and every edit goes
 * through these macros, so no file writes its own prev/next surgery. */
#pragma once

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>

/* The links of an item on the list called name: `LIST_FIELDS(Job, queue);` in struct Job. */
#define LIST_FIELDS(t, name) t *name##_next, *name##_prev

#define LIST_HEAD_INIT(head) \
        do {                 \
                (head) = NULL; \
        } while (false)

#define LIST_INIT(name, item)                                        \
        do {                                                         \
                __typeof__(*(item)) *_item = (item);                 \
                assert(_item);                                       \
                _item->name##_prev = _item->name##_next = NULL;      \
        } while (false)

/* Adds item at the front of the list whose first element is *head. */
#define LIST_PREPEND(name, head, item)                                          \
        ({                                                                      \
                __typeof__(*(head)) **_head = &(head), *_item = (item);         \
                assert(_item);                                                  \
                if ((_item->name##_next = *_head))                              \
                        _item->name##_next->name##_prev = _item;                \
                _item->name##_prev = NULL;                                      \
                *_head = _item;                                                 \
                _item;                                                          \
        })

/* Adds item at the end (walks the list: for the short lists of one owner; keep a tail pointer
 * with LIST_INSERT_AFTER where order matters and lists grow long). */
#define LIST_APPEND(name, head, item)                                           \
        ({                                                                      \
                __typeof__(*(head)) **_hhead = &(head), *_tail = *_hhead;        \
                while (_tail && _tail->name##_next)                             \
                        _tail = _tail->name##_next;                             \
                LIST_INSERT_AFTER(name, *_hhead, _tail, item);                  \
        })

/* Inserts item after a (a == NULL: at the front). */
#define LIST_INSERT_AFTER(name, head, a, item)                                  \
        ({                                                                      \
                __typeof__(*(head)) **_head = &(head), *_a = (a), *_b = (item);  \
                assert(_b);                                                     \
                if (!_a) {                                                      \
                        if ((_b->name##_next = *_head))                         \
                                _b->name##_next->name##_prev = _b;              \
                        _b->name##_prev = NULL;                                 \
                        *_head = _b;                                            \
                } else {                                                        \
                        if ((_b->name##_next = _a->name##_next))                \
                                _b->name##_next->name##_prev = _b;              \
                        _b->name##_prev = _a;                                   \
                        _a->name##_next = _b;                                   \
                }                                                               \
                _b;                                                             \
        })

/* Unlinks item, which must be on the list whose first element is *head. */
#define LIST_REMOVE(name, head, item)                                           \
        ({                                                                      \
                __typeof__(*(head)) **_head = &(head), *_item = (item);         \
                assert(_item);                                                  \
                if (_item->name##_next)                                         \
                        _item->name##_next->name##_prev = _item->name##_prev;   \
                if (_item->name##_prev)                                         \
                        _item->name##_prev->name##_next = _item->name##_next;   \
                else {                                                          \
                        assert(*_head == _item);                                \
                        *_head = _item->name##_next;                            \
                }                                                               \
                _item->name##_next = _item->name##_prev = NULL;                 \
                _item;                                                          \
        })

/* True while item is linked (or is the only element: then compare with the head). */
#define LIST_IS_LINKED(name, head, item) \
        ((item)->name##_prev || (item)->name##_next || (head) == (item))

#define LIST_FOREACH(name, i, head) for (__typeof__(*(head)) *i = (head); i; i = i->name##_next)

/* Safe against removal (and freeing) of i inside the body. */
#define LIST_FOREACH_SAFE(name, i, n, head) \
        for (__typeof__(*(head)) *n, *i = (head); i && ((n = i->name##_next), 1); i = n)

#define LIST_POP(name, head) \
        ({ __typeof__(*(head)) **_phead = &(head), *_first = *_phead; _first ? LIST_REMOVE(name, *_phead, _first) : NULL; })
