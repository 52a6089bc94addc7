#include <sqlite3.h>

/// SQLITE_STATIC is a macro casting 0 to a function pointer, which Swift cannot import.
static inline sqlite3_destructor_type csqlite_static(void) { return SQLITE_STATIC; }

/// sqlite3_config is variadic, which Swift cannot call. Without memory statistics SQLite's allocations take no
/// global lock; it must run before SQLite initializes (it answers SQLITE_MISUSE after, and changes nothing).
static inline int csqlite_disable_memory_statistics(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }
