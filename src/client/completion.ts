// Owns shell completion: a bash or zsh script, generated from the commands commander knows,
// that completes command names, their subcommands and their long options.

import type { Command } from 'commander';

interface Entry {
  path: string;
  subcommands: string[];
  options: string[];
}

function entries(cmd: Command, prefix: string[] = []): Entry[] {
  const options = cmd.options.map((o) => o.long).filter((l): l is string => typeof l === 'string');
  const subs = cmd.commands.filter((c) => c.name() !== 'help');
  const here: Entry = { path: prefix.join(' '), subcommands: subs.map((c) => c.name()), options };
  return [here, ...subs.flatMap((c) => entries(c, [...prefix, c.name()]))];
}

const RUN_COMMANDS = ['serve', 'engine', 'frontend', 'image', 'version'];

export function completionScript(program: Command, shell: 'bash' | 'zsh'): string {
  const all = entries(program);
  const globalOptions = all[0]!.options;
  const cases = all.map((e) => {
    const words = [...(e.path === '' ? RUN_COMMANDS : []), ...e.subcommands, ...e.options, ...(e.path === '' ? [] : globalOptions)];
    return `    "${e.path}") words="${[...new Set(words)].join(' ')}" ;;`;
  });
  const body = `_infergate_words() {
  local path="$1" words
  case "$path" in
${cases.join('\n')}
    *) words="" ;;
  esac
  echo "$words"
}
`;
  if (shell === 'bash') {
    return `# bash completion for infergate (infergate completion bash)
${body}
_infergate() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" i w
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    if [[ " $(_infergate_words "$path") " == *" $w "* ]]; then path="\${path:+$path }$w"; fi
  done
  COMPREPLY=($(compgen -W "$(_infergate_words "$path")" -- "$cur"))
}
complete -F _infergate infergate
`;
  }
  return `#compdef infergate
# zsh completion for infergate (infergate completion zsh)
${body}
_infergate() {
  local path="" w
  for w in "\${(@)words[2,CURRENT-1]}"; do
    [[ "$w" == -* ]] && continue
    if [[ " $(_infergate_words "$path") " == *" $w "* ]]; then path="\${path:+$path }$w"; fi
  done
  compadd -- \${=\$(_infergate_words "$path")}
}
compdef _infergate infergate
`;
}
