// The option schema as CLI11 flags; see schema_flags.h.
#include "schema_flags.h"

#include <sstream>

namespace ggdiff::apps {

namespace {

std::string number_text(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

// "a,b,c" -> "a, b, c".
std::string spaced(const std::string& csv) {
    std::string out;
    for (char c : csv) {
        out += c;
        if (c == ',') out += ' ';
    }
    return out;
}

const char* type_label(const ggdiff_option_desc& d) {
    switch (d.type) {
        case GGDIFF_OPTION_PATH:
            return "PATH";
        case GGDIFF_OPTION_INT:
            return "INT";
        case GGDIFF_OPTION_FLOAT:
            return "FLOAT";
        case GGDIFF_OPTION_ENUM:
            return "VALUE";
        case GGDIFF_OPTION_FLOAT_LIST:
            return "X,Y,...";
        case GGDIFF_OPTION_INT_LIST:
            return "[N,...]";
        case GGDIFF_OPTION_PAIR:
            return "N|WxH";
        default:
            return "TEXT";
    }
}

// "-m,--model" (CLI11's spelling of an option's names), with every alias.
std::string cli11_names(const ggdiff_option_desc& d) {
    std::string names = d.short_name[0] ? std::string("-") + d.short_name + ",--" + d.name
                                        : std::string("--") + d.name;
    std::stringstream ss(d.aliases);
    std::string alias;
    while (std::getline(ss, alias, ',')) {
        if (!alias.empty()) names += ",--" + alias;
    }
    return names;
}

}  // namespace

std::vector<ggdiff_option_desc> schema_options() {
    std::vector<ggdiff_option_desc> out;
    for (int i = 0; i < ggdiff_option_count(); ++i) {
        ggdiff_option_desc d{};
        if (ggdiff_option_info(i, &d) == 0) out.push_back(d);
    }
    return out;
}

bool is_engine_option(const ggdiff_option_desc& d) {
    return (d.flags & (GGDIFF_OPTION_MODEL | GGDIFF_OPTION_GENERATE)) != 0 &&
           !(d.flags & GGDIFF_OPTION_FRONTEND);
}

std::string flag_help(const ggdiff_option_desc& d) {
    std::string h = d.help;
    if (!h.empty() && h.back() != '.') h += '.';
    if (d.type == GGDIFF_OPTION_ENUM && d.values[0]) h += " One of: " + spaced(d.values) + ".";
    if (d.default_value[0] && d.type != GGDIFF_OPTION_BOOL) {
        h += std::string(" Default: ") + d.default_value + ".";
    }
    const bool lo = d.min > -1e299, hi = d.max < 1e299;
    if (d.type == GGDIFF_OPTION_INT || d.type == GGDIFF_OPTION_FLOAT) {
        if (lo && hi) {
            h += " Range: " + number_text(d.min) + " to " + number_text(d.max) + ".";
        } else if (lo) {
            h += " At least " + number_text(d.min) + ".";
        }
    }
    if (d.support == GGDIFF_SUPPORT_NO_EFFECT) {
        h += std::string(" No effect here: ") + d.note + ".";
    } else if (d.support == GGDIFF_SUPPORT_NOT_YET) {
        h += " Not supported yet.";
    } else if (d.unsupported_values[0]) {
        const std::string u = d.unsupported_values;
        h += u[0] == '!' ? " Only " + spaced(u.substr(1)) + " is supported yet."
                         : " Not supported yet: " + spaced(u) + ".";
    }
    return h;
}

CLI::Option* add_schema_flag(CLI::App& app, const ggdiff_option_desc& d,
                             std::function<void(const std::string&)> on_value,
                             const std::string& help, const std::string& group) {
    const std::string names = cli11_names(d);
    CLI::Option* opt = nullptr;
    if (d.type == GGDIFF_OPTION_BOOL && !(d.flags & GGDIFF_OPTION_VALUE_OPTIONAL)) {
        opt = app.add_flag_callback(
            names, [on_value] { on_value("true"); }, help);
        opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    } else if (d.flags & GGDIFF_OPTION_REPEATABLE) {
        opt = app.add_option_function<std::vector<std::string>>(
                     names,
                     [on_value](const std::vector<std::string>& values) {
                         for (const std::string& v : values) on_value(v);
                     },
                     help)
                  ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                  ->expected(1)
                  ->allow_extra_args(false)
                  ->type_name(type_label(d));
    } else {
        opt = app.add_option_function<std::string>(names, on_value, help)
                  ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
                  ->type_name(type_label(d));
        // A BOOL whose value may be left out: --auto-fit, --auto-fit on, --auto-fit off.
        if (d.type == GGDIFF_OPTION_BOOL) opt->expected(0, 1)->type_name("[on|off]");
    }
    opt->group(group);
    return opt;
}

void add_schema_flags(CLI::App& app, ggdiff_options* options, std::string& error,
                      const std::function<bool(const ggdiff_option_desc&)>& want) {
    for (const ggdiff_option_desc& d : schema_options()) {
        const std::string name = d.name;
        if (name == "help" || name == "version" || !want(d)) continue;
        auto set = [options, name, &error](const std::string& value) {
            if (ggdiff_options_set(options, name.c_str(), value.c_str()) != 0 && error.empty()) {
                error = ggdiff_last_error();
            }
        };
        add_schema_flag(app, d, set, flag_help(d), d.group);
    }
}

void add_help_and_version(CLI::App& app, const std::string& version_text,
                          const std::string& group) {
    ggdiff_option_desc help{}, version{};
    ggdiff_option_info(ggdiff_option_find("help"), &help);
    ggdiff_option_info(ggdiff_option_find("version"), &version);
    app.set_help_flag("-h,--help", help.help)->group(group.empty() ? help.group : group);
    app.set_version_flag("--version", version_text, version.help)
        ->group(group.empty() ? version.group : group);
}

std::string WrappingFormatter::make_option_name(const CLI::Option* opt, bool is_positional) const {
    if (is_positional) return CLI::Formatter::make_option_name(opt, is_positional);
    std::string out;
    for (const std::string& s : opt->get_snames()) out += (out.empty() ? "-" : ", -") + s;
    for (const std::string& l : opt->get_lnames()) out += (out.empty() ? "--" : ", --") + l;
    return out;
}

std::string WrappingFormatter::make_option_desc(const CLI::Option* opt) const {
    std::string out;
    size_t line = 0;
    std::istringstream words(opt->get_description());
    std::string word;
    while (words >> word) {
        if (line > 0 && line + 1 + word.size() > kWidth) {
            out += '\n';
            line = 0;
        } else if (line > 0) {
            out += ' ';
            ++line;
        }
        out += word;
        line += word.size();
    }
    return out;
}

ParseOutcome parse_command_line(CLI::App& app, int argc, const char* const* argv,
                                const std::string& set_error, std::string& error) {
    std::vector<std::string> args;  // CLI11 takes them last first
    for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i] ? argv[i] : "");
    try {
        app.parse(args);
    } catch (const CLI::CallForHelp&) {
        return ParseOutcome::help;
    } catch (const CLI::CallForVersion&) {
        return ParseOutcome::version;
    } catch (const CLI::ParseError& e) {
        error = e.what();
        return ParseOutcome::error;
    } catch (const std::exception& e) {
        error = std::string("invalid command line: ") + e.what();
        return ParseOutcome::error;
    }
    if (!set_error.empty()) {
        error = set_error;
        return ParseOutcome::error;
    }
    return ParseOutcome::run;
}

}  // namespace ggdiff::apps
