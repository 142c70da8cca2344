#include <google/protobuf/text_format.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/views.h"

namespace megascale::cli {

Status RunValidate(const ValidateArgs& args) {
  MS_ASSIGN_OR_RETURN(Scenario scenario, LoadResolvedScenario(args.scenario));
  std::string text;
  google::protobuf::TextFormat::PrintToString(scenario, &text);
  std::cout << "# " << args.scenario << " is valid; resolved with every default:\n" << text;
  return Status::Ok();
}

}  // namespace megascale::cli
