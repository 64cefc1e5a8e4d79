/* Linker test kernel: a .preinit_array entry, which only an executable can have: refused. */
static int reloc_preinit_value;
static void reloc_preinit_fn(void) { reloc_preinit_value = 1; }
__attribute__((section(".preinit_array"), used)) static void (*reloc_preinit_entry)(void) = reloc_preinit_fn;
int reloc_preinit_get(void) { return reloc_preinit_value; }
