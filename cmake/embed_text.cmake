# cmake -DINPUT=file -DOUTPUT=file.cpp -DNAME=kName -DNAMESPACE=ns -P embed_text.cmake
# Writes OUTPUT, a C++ file defining `const char NAME[]` (in NAMESPACE) as the bytes of the text
# file INPUT, in a raw string literal. Run at build time, so that an edited INPUT is embedded again.
set(delimiter "sk_embed")
file(READ "${INPUT}" text)
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter ')${delimiter}\"'")
endif()
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${INPUT} by cmake/embed_text.cmake: edit that file instead.\n"
     "namespace ${NAMESPACE} {\n"
     "extern const char ${NAME}[];\n"
     "const char ${NAME}[] = R\"${delimiter}(${text})${delimiter}\";\n"
     "}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
