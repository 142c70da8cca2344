#include "cli/app.h"

int main(int argc, char** argv) { return megascale::cli::Main(argc, argv); }
