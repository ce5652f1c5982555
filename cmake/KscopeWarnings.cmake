# Warning flags shared by every kscope target (gcc and clang).
add_compile_options(-Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes
                    -Wmissing-prototypes -Wvla -Wundef -Wpointer-arith
                    -Wcast-qual -Wwrite-strings)
if(KSCOPE_WERROR)
  add_compile_options(-Werror)
endif()
