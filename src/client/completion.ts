// Owns shell completion: a bash or zsh script, generated from the commands commander knows,
// that completes command names, their subcommands and long options, the values of a few
// options (-o formats, --for conditions, --max-priority classes, --rollout-mode,
// --autoscaling-metric, files, saved contexts), and deployment names where a command takes one
// (its first argument is <name>). Names come from the control API through
// `infergate __complete deployments PREFIX`, asked with a short timeout; it prints nothing when
// the API cannot answer in time, so a <Tab> never hangs and never prints an error.

import type { Command } from 'commander';
import { ApiClient } from './api.js';
import type { ClientIo } from './command-kit.js';
import { configPath, readContexts, resolveConnection, type ConnectionFlags } from './contexts.js';
import { listDeployments } from './deployments.js';

/** How long a <Tab> waits for the API's list of deployments before completing nothing. */
export const COMPLETION_TIMEOUT_MS = 1500;

/** The hidden command the scripts call back for words that only the API or the config file knows. */
export const COMPLETE_COMMAND = '__complete';

interface Entry {
  path: string;
  subcommands: string[];
  options: string[];
  /** Its options that take a value (`--tail 20`), long and short, so their values are not taken for arguments. */
  values: string[];
  /** Its first argument is a deployment name. */
  takesName: boolean;
}

const visible = (cmd: Command): Command[] => cmd.commands.filter((c) => c.name() !== 'help' && c.name() !== COMPLETE_COMMAND);

function entries(cmd: Command, prefix: string[] = []): Entry[] {
  const options = cmd.options.map((o) => o.long).filter((l): l is string => typeof l === 'string');
  const values = cmd.options.filter((o) => o.required || o.optional).flatMap((o) => [o.long, o.short]).filter((f): f is string => typeof f === 'string');
  const subs = visible(cmd);
  const here: Entry = { path: prefix.join(' '), subcommands: subs.map((c) => c.name()), options, values, takesName: cmd.registeredArguments[0]?.name() === 'name' };
  return [here, ...subs.flatMap((c) => entries(c, [...prefix, c.name()]))];
}

const RUN_COMMANDS = ['serve', 'engine', 'frontend', 'image', 'admin', 'version'];

/** Names a shell may expand safely: the API's names are DNS labels, anything else is left out. */
const SAFE_WORD = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function completionScript(program: Command, shell: 'bash' | 'zsh'): string {
  const all = entries(program);
  const globalOptions = all[0]!.options;
  const cases = all.map((e) => {
    const words = [...(e.path === '' ? RUN_COMMANDS : []), ...e.subcommands, ...e.options, ...(e.path === '' ? [] : globalOptions)];
    return `    "${e.path}") words="${[...new Set(words)].join(' ')}" ;;`;
  });
  const globalValues = all[0]!.values;
  const valueCases = all.map((e) => `    "${e.path}") echo "${[...new Set([...e.values, ...globalValues])].join(' ')}" ;;`);
  const named = all.filter((e) => e.takesName).map((e) => `"${e.path}"`);
  // One word of the line being completed, read the same way by both shells: the connection
  // flags are kept to pass on to the name lookup, and an option's value is skipped.
  const scanWord = `    w="\${words[i]}"
    if ((skip)); then skip=0; continue; fi
    case "$w" in
      --api|--key|--context|--project) conn+=("$w" "\${words[i+1]}"); skip=1; continue ;;
      --api=*|--key=*|--context=*|--project=*) conn+=("$w"); continue ;;
    esac
    if [[ " $(_infergate_values "$cmdpath") " == *" $w "* ]]; then skip=1; continue; fi`;
  const shared = `_infergate_words() {
  local cmdpath="$1" words
  case "$cmdpath" in
${cases.join('\n')}
    *) words="" ;;
  esac
  echo "$words"
}

# The options of a command that take a value.
_infergate_values() {
  case "$1" in
${valueCases.join('\n')}
  esac
}

# Commands whose first argument is a deployment name.
_infergate_takes_name() {
  case "$1" in
    ${named.length > 0 ? named.join('|') : '"-"'}) return 0 ;;
  esac
  return 1
}
`;
  // Both scripts read the words before the cursor the same way: a word that names a subcommand
  // of the path so far extends it (until an argument was seen); --api, --key, --context and --project are
  // passed on to the name lookup, so it asks the same API the command line will; the value
  // after an option that takes one is skipped.
  if (shell === 'bash') {
    return `# bash completion for infergate (infergate completion bash)
${shared}
_infergate() {
  # The line is split on blanks only: COMP_WORDS also splits at ':' and '=', which would cut
  # an --api URL into pieces.
  local line="\${COMP_LINE:0:COMP_POINT}" cur="" prev="" cmdpath="" w skip=0 args=0 i
  local -a words conn=()
  read -ra words <<< "$line"
  if [[ "$line" =~ [[:blank:]]$ ]]; then words+=(""); fi
  cur="\${words[\${#words[@]}-1]}"
  (( \${#words[@]} > 1 )) && prev="\${words[\${#words[@]}-2]}"
  for ((i = 1; i < \${#words[@]} - 1; i++)); do
${scanWord}
    [[ "$w" == -* ]] && continue
    if ((args == 0)) && [[ " $(_infergate_words "$cmdpath") " == *" $w "* ]]; then cmdpath="\${cmdpath:+$cmdpath }$w"; else args=$((args + 1)); fi
  done
  if [[ -n "$prev" && " $(_infergate_values "$cmdpath") " == *" $prev "* ]]; then
    case "$prev" in
      -o|--output) COMPREPLY=($(compgen -W "table json yaml name" -- "$cur")) ;;
      --for) COMPREPLY=($(compgen -W "ready deleted" -- "$cur")) ;;
      --max-priority) COMPREPLY=($(compgen -W "critical standard sheddable none" -- "$cur")) ;;
      --rollout-mode) COMPREPLY=($(compgen -W "automatic manual" -- "$cur")) ;;
      --autoscaling-metric) COMPREPLY=($(compgen -W "concurrency queue_depth kv_cache ttft" -- "$cur")) ;;
      -f|--file|--key-file|--password-file) COMPREPLY=($(compgen -f -- "$cur")) ;;
      --context) COMPREPLY=($("\${COMP_WORDS[0]}" ${COMPLETE_COMMAND} contexts "$cur" 2>/dev/null)) ;;
      *) COMPREPLY=() ;;
    esac
    return
  fi
  if [[ "$cur" != -* ]] && ((args == 0)) && _infergate_takes_name "$cmdpath"; then
    COMPREPLY=($("\${COMP_WORDS[0]}" "\${conn[@]}" ${COMPLETE_COMMAND} deployments "$cur" 2>/dev/null))
    return
  fi
  COMPREPLY=($(compgen -W "$(_infergate_words "$cmdpath")" -- "$cur"))
}
complete -F _infergate infergate
`;
  }
  return `#compdef infergate
# zsh completion for infergate (infergate completion zsh)
${shared}
_infergate() {
  local cmdpath="" w prev="\${words[CURRENT-1]}" cur="\${words[CURRENT]}" skip=0 i
  local -a conn found
  integer args=0
  for ((i = 2; i < CURRENT; i++)); do
${scanWord}
    [[ "$w" == -* ]] && continue
    if ((args == 0)) && [[ " $(_infergate_words "$cmdpath") " == *" $w "* ]]; then cmdpath="\${cmdpath:+$cmdpath }$w"; else args+=1; fi
  done
  if [[ -n "$prev" && " $(_infergate_values "$cmdpath") " == *" $prev "* ]]; then
    case "$prev" in
      -o|--output) compadd -- table json yaml name ;;
      --for) compadd -- ready deleted ;;
      --max-priority) compadd -- critical standard sheddable none ;;
      --rollout-mode) compadd -- automatic manual ;;
      --autoscaling-metric) compadd -- concurrency queue_depth kv_cache ttft ;;
      -f|--file|--key-file|--password-file) _files ;;
      --context) found=(\${(f)"$("\${words[1]}" ${COMPLETE_COMMAND} contexts "$cur" 2>/dev/null)"}); compadd -- $found ;;
    esac
    return
  fi
  if [[ "$cur" != -* ]] && ((args == 0)) && _infergate_takes_name "$cmdpath"; then
    found=(\${(f)"$("\${words[1]}" "\${conn[@]}" ${COMPLETE_COMMAND} deployments "$cur" 2>/dev/null)"})
    compadd -- $found
    return
  fi
  compadd -- \${=\$(_infergate_words "$cmdpath")}
}

# Loaded from $fpath (autoload), this file is the body of _infergate: complete now. Sourced, register.
if [[ "\${funcstack[1]}" == "_infergate" ]]; then
  _infergate "$@"
else
  compdef _infergate infergate
fi
`;
}

/**
 * The words `infergate __complete KIND PREFIX` prints, one a line: deployment names from the
 * API (asked with a short timeout) or the saved contexts. Whatever goes wrong — not logged in,
 * the API down or slow, a refusal — gives no words rather than an error: it runs under a <Tab>.
 */
export async function completionWords(kind: string, prefix: string, flags: ConnectionFlags, io: Pick<ClientIo, 'env' | 'request'>): Promise<string[]> {
  let words: string[];
  try {
    if (kind === 'contexts') {
      words = Object.keys(readContexts(configPath(io.env)).contexts);
    } else if (kind === 'deployments') {
      const client = new ApiClient(resolveConnection(flags, io.env), { timeoutMs: COMPLETION_TIMEOUT_MS, request: io.request });
      words = (await listDeployments(client)).map((d) => d.name);
    } else {
      return [];
    }
  } catch {
    return [];
  }
  return words.filter((w) => w.startsWith(prefix) && SAFE_WORD.test(w)).sort();
}
