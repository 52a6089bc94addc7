#include <libxml/xmlversion.h>
// Debian builds libxml2 with ICU, and libxml/encoding.h then includes ICU's headers, which clash with the copy
// of ICU that Foundation brings. Nothing here uses libxml2's ICU converter types, so its headers are read as if
// libxml2 had been built without it (only the declaration of a struct this package never touches changes).
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/xmlreader.h>
#include <libxml/xmlerror.h>
#include <libxml/globals.h>

/// `xmlFree` is a global function pointer in libxml2, which Swift imports as a variable; one call through it.
static inline void cxml_free(void *pointer) { xmlFree(pointer); }
