// Owns the chat templates of families whose tokenizer packages ship none (issue 30), written from the
// families' model cards: gpt-oss's Harmony template (from OpenAI's harmony format guide; the original's
// "Current date" line is left out so renders are reproducible) and Qwen3-Coder's XML tool template. Both keep
// the originals' layout of system, tools, calls, tool results and generation prompt.

export const GPT_OSS_TEMPLATE = `{%- macro render_type(p) -%}
{%- if p.enum is defined -%}{%- for v in p.enum -%}"{{ v }}"{%- if not loop.last %} | {% endif -%}{%- endfor -%}
{%- elif p.type == "string" -%}string
{%- elif p.type == "number" or p.type == "integer" -%}number
{%- elif p.type == "boolean" -%}boolean
{%- elif p.type == "array" -%}any[]
{%- else -%}any{%- endif -%}
{%- endmacro -%}
<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.
Knowledge cutoff: 2024-06

Reasoning: {{ reasoning_effort if reasoning_effort is defined else "medium" }}

# Valid channels: analysis, commentary, final. Channel must be included for every message.
{%- if tools %}
Calls to these tools must go to the commentary channel: 'functions'.{% endif %}<|end|>
{%- set ns = namespace(sys="", last="") %}
{%- if messages and (messages[0].role == "system" or messages[0].role == "developer") %}{% set ns.sys = messages[0].content %}{% endif %}
{%- if ns.sys or tools %}<|start|>developer<|message|>
{%- if ns.sys %}# Instructions

{{ ns.sys }}{% if tools %}

{% endif %}{% endif %}
{%- if tools %}# Tools

## functions

namespace functions {
{% for t in tools %}{% set f = t.function %}
// {{ f.description }}
type {{ f.name }} = (_: {
{%- for name, p in f.parameters.properties | items %}
{% if p.description %}// {{ p.description }}
{% endif %}{{ name }}{{ "" if f.parameters.required is defined and name in f.parameters.required else "?" }}: {{ render_type(p) }},
{%- endfor %}
}) => any;
{% endfor %}
} // namespace functions{% endif %}<|end|>{% endif %}
{%- for m in messages %}
{%- if m.role == "user" %}<|start|>user<|message|>{{ m.content }}<|end|>
{%- elif m.role == "assistant" %}
{%- if m.tool_calls %}
{%- for c in m.tool_calls %}{% set ns.last = c.function.name %}<|start|>assistant to=functions.{{ c.function.name }}<|channel|>commentary json<|message|>{{ c.function.arguments | tojson }}<|call|>{%- endfor %}
{%- else %}<|start|>assistant<|channel|>final<|message|>{{ m.content }}<|end|>
{%- endif %}
{%- elif m.role == "tool" %}<|start|>functions.{{ ns.last }} to=assistant<|channel|>commentary<|message|>{{ m.content }}<|end|>
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|start|>assistant{% endif %}`;

export const QWEN3_CODER_TEMPLATE =
  `{%- if messages[0]["role"] == "system" %}{%- set system_message = messages[0]["content"] %}{%- set loop_messages = messages[1:] %}{%- else %}{%- set loop_messages = messages %}{%- endif %}
{%- if system_message is defined %}{{- "<|im_start|>system\\n" + system_message }}{%- elif tools %}{{- "<|im_start|>system\\nYou are Qwen, a helpful AI assistant that can interact with a computer to solve tasks." }}{%- endif %}
{%- if tools %}
{{- "\\n\\n# Tools\\n\\nYou have access to the following functions:\\n\\n<tools>" }}
{%- for tool in tools %}{%- set tool = tool.function %}
{{- "\\n<function>\\n<name>" ~ tool.name ~ "</name>" }}
{%- if tool.description is defined %}{{- "\\n<description>" ~ (tool.description | trim) ~ "</description>" }}{%- endif %}
{{- "\\n<parameters>" }}
{%- for param_name, param_fields in tool.parameters.properties | items %}
{{- "\\n<parameter>\\n<name>" ~ param_name ~ "</name>" }}
{%- if param_fields.type is defined %}{{- "\\n<type>" ~ param_fields.type ~ "</type>" }}{%- endif %}
{%- if param_fields.description is defined %}{{- "\\n<description>" ~ (param_fields.description | trim) ~ "</description>" }}{%- endif %}
{{- "\\n</parameter>" }}
{%- endfor %}
{{- "\\n</parameters>\\n</function>" }}
{%- endfor %}
{{- "\\n</tools>" }}
{{- "\\n\\nIf you choose to call a function ONLY reply in the following format with NO suffix:\\n\\n<tool_call>\\n<function=example_function_name>\\n<parameter=example_parameter_1>\\nvalue_1\\n</parameter>\\n<parameter=example_parameter_2>\\nThis is the value for the second parameter\\nthat can span\\nmultiple lines\\n</parameter>\\n</function>\\n</tool_call>\\n\\n<IMPORTANT>\\nReminder:\\n- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\\n- Required parameters MUST be specified\\n- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\\n- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\\n</IMPORTANT>" }}
{%- endif %}
{%- if system_message is defined or tools %}{{- "<|im_end|>\\n" }}{%- endif %}
{%- set ns = namespace(prev="") %}
{%- for message in loop_messages %}
{%- if message.role == "assistant" and message.tool_calls %}
{{- "<|im_start|>assistant" }}
{%- if message.content is string and message.content | trim | length > 0 %}{{- "\\n" + (message.content | trim) + "\\n" }}{%- endif %}
{%- for tool_call in message.tool_calls %}{%- set tool_call = tool_call.function %}
{{- "\\n<tool_call>\\n<function=" + tool_call.name + ">\\n" }}
{%- for args_name, args_value in tool_call.arguments | items %}
{{- "<parameter=" + args_name + ">\\n" }}{{- args_value | tojson if args_value is mapping or (args_value is iterable and args_value is not string) else args_value | string }}{{- "\\n</parameter>\\n" }}
{%- endfor %}
{{- "</function>\\n</tool_call>" }}
{%- endfor %}
{{- "<|im_end|>\\n" }}
{%- elif message.role == "tool" %}
{%- if ns.prev != "tool" %}{{- "<|im_start|>user\\n" }}{%- endif %}
{{- "<tool_response>\\n" + message.content + "\\n</tool_response>\\n" }}
{%- if loop.last or loop_messages[loop.index0 + 1].role != "tool" %}{{- "<|im_end|>\\n" }}{%- endif %}
{%- else %}
{{- "<|im_start|>" + message.role + "\\n" + message.content + "<|im_end|>\\n" }}
{%- endif %}
{%- set ns.prev = message.role %}
{%- endfor %}
{%- if add_generation_prompt %}{{- "<|im_start|>assistant\\n" }}{%- endif %}`;

/** DeepSeek R1 (0528): V3's template with the reply's thinking opened by the generation prompt, as R1's is. */
export function deepseekR1(v3: string): string {
  return v3
    .replace("{{'<｜Assistant｜>'}}{% endif %}", "{{'<｜Assistant｜><think>\\n'}}{% endif %}")
    .replace(
      "{{'<｜Assistant｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}",
      "{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}",
    );
}

/** DeepSeek V3.1 (model card): tools in the system prompt, `NAME<｜tool▁sep｜>ARGS` calls, `</think>` when not thinking. */
export const DEEPSEEK_V31_TEMPLATE =
  `{% if not thinking is defined %}{% set thinking = false %}{% endif %}{% set ns = namespace(is_first=false, is_tool=false, system_prompt='', is_first_sp=true, is_last_user=false) %}{%- for message in messages %}{%- if message['role'] == 'system' %}{%- if ns.is_first_sp %}{% set ns.system_prompt = ns.system_prompt + message['content'] %}{% set ns.is_first_sp = false %}{%- else %}{% set ns.system_prompt = ns.system_prompt + '\\n\\n' + message['content'] %}{%- endif %}{%- endif %}{%- endfor %}{% if tools is defined and tools is not none %}{% set tool_ns = namespace(text='## Tools\\nYou have access to the following tools:\\n') %}{% for tool in tools %}{% set tool_ns.text = tool_ns.text + '\\n### ' + tool.function.name + '\\nDescription: ' + tool.function.description + '\\n\\nParameters: ' + (tool.function.parameters | tojson) + '\\n' %}{% endfor %}{% set tool_ns.text = tool_ns.text + "\\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_call_name<｜tool▁sep｜>tool_call_arguments<｜tool▁call▁end｜>{{additional_tool_calls}}<｜tool▁calls▁end｜>\\n\\nWhere:\\n\\n- \`tool_call_name\` must be an exact match to one of the available tools\\n- \`tool_call_arguments\` must be valid JSON that strictly follows the tool's Parameters Schema\\n- For multiple tool calls, chain them directly without separators or spaces\\n" %}{% set ns.system_prompt = ns.system_prompt + '\\n\\n' + tool_ns.text %}{% endif %}{{ bos_token }}{{ ns.system_prompt }}{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{%- set ns.is_first = false -%}{%- set ns.is_last_user = true -%}{{'<｜User｜>' + message['content']}}{%- endif %}{%- if message['role'] == 'assistant' and message['tool_calls'] is defined and message['tool_calls'] is not none %}{%- if ns.is_last_user %}{{'<｜Assistant｜></think>'}}{%- endif %}{%- set ns.is_last_user = false -%}{%- set ns.is_first = false %}{%- set ns.is_tool = false -%}{%- for tool in message['tool_calls'] %}{%- if not ns.is_first %}{%- if message['content'] is none %}{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>'+ tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}{%- else %}{{message['content'] + '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}{%- endif %}{%- set ns.is_first = true -%}{%- else %}{{'<｜tool▁call▁begin｜>'+ tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}{%- endif %}{%- endfor %}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}{%- endif %}{%- if message['role'] == 'assistant' and (message['tool_calls'] is not defined or message['tool_calls'] is none) %}{%- if ns.is_last_user %}{{'<｜Assistant｜></think>'}}{%- endif %}{%- set ns.is_last_user = false -%}{%- if ns.is_tool %}{{message['content'] + '<｜end▁of▁sentence｜>'}}{%- set ns.is_tool = false -%}{%- else %}{%- set content = message['content'] -%}{%- if '</think>' in content %}{%- set content = content.split('</think>')[-1] -%}{%- endif %}{{content + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endif %}{%- if message['role'] == 'tool' %}{%- set ns.is_last_user = false -%}{%- set ns.is_tool = true -%}{{'<｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- endif %}{%- endfor -%}{%- if add_generation_prompt and ns.is_last_user and not ns.is_tool %}{{'<｜Assistant｜>'}}{%- if not thinking %}{{'</think>'}}{%- else %}{{'<think>'}}{%- endif %}{% endif %}`;

/** GLM 4.5 (model card): `<tool_call>NAME` with `<arg_key>`/`<arg_value>` pairs, `<think>` blocks, `<|observation|>` results. */
export const GLM45_TEMPLATE = `[gMASK]<sop>
{%- if tools -%}
<|system|>
# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{% for tool in tools %}
{{ tool | tojson }}
{% endfor %}
</tools>

For each function call, output the function name and arguments within the following XML format:
<tool_call>{function-name}
<arg_key>{arg-key-1}</arg_key>
<arg_value>{arg-value-1}</arg_value>
<arg_key>{arg-key-2}</arg_key>
<arg_value>{arg-value-2}</arg_value>
...
</tool_call>{%- endif -%}
{%- for m in messages %}
{%- if m.role == 'user' -%}<|user|>
{{ m.content }}
{%- elif m.role == 'assistant' -%}
<|assistant|>
<think></think>
{{ m.content | trim if m.content else '' }}
{%- if m.tool_calls %}{% for tc in m.tool_calls %}{% set tc = tc.function %}
<tool_call>{{ tc.name }}
{% for k, v in tc.arguments | items %}<arg_key>{{ k }}</arg_key>
<arg_value>{{ v if v is string else v | tojson }}</arg_value>
{% endfor %}</tool_call>{% endfor %}{% endif %}
{%- elif m.role == 'tool' -%}
{%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}<|observation|>{% endif %}
<tool_response>
{{ m.content }}
</tool_response>
{%- elif m.role == 'system' -%}
<|system|>
{{ m.content }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}`;

/** Kimi K2 (model card): declared tools, `functions.NAME:IDX` calls in a section, results as system turns. */
export const KIMI_K2_TEMPLATE =
  `{%- if tools -%}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>{%- endif -%}{%- for message in messages -%}{%- if loop.first and messages[0]['role'] != 'system' -%}<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>{%- endif -%}{%- if message['role'] == 'system' -%}<|im_system|>system<|im_middle|>{%- elif message['role'] == 'user' -%}<|im_user|>user<|im_middle|>{%- elif message['role'] == 'assistant' -%}<|im_assistant|>assistant<|im_middle|>{%- else -%}<|im_system|>tool<|im_middle|>{%- endif -%}{%- if message['role'] == 'assistant' and message.tool_calls -%}{{ message['content'] or '' }}<|tool_calls_section_begin|>{%- for tool_call in message.tool_calls -%}<|tool_call_begin|>functions.{{ tool_call['function']['name'] }}:{{ loop.index0 }}<|tool_call_argument_begin|>{% if tool_call['function']['arguments'] is string %}{{ tool_call['function']['arguments'] }}{% else %}{{ tool_call['function']['arguments'] | tojson }}{% endif %}<|tool_call_end|>{%- endfor -%}<|tool_calls_section_end|>{%- elif message['role'] == 'tool' -%}## Return of {{ message.tool_call_id }}
{{ message['content'] }}{%- else -%}{{ message['content'] }}{%- endif -%}<|im_end|>{%- endfor -%}{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}`;

/** Magistral / Mistral Small 3.2 (model cards): [SYSTEM_PROMPT], [AVAILABLE_TOOLS], `[TOOL_CALLS]NAME[ARGS]{...}`, [THINK]. */
export const MAGISTRAL_TEMPLATE =
  `{{ bos_token }}{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content'] %}{%- set loop_messages = messages[1:] %}{%- else %}{%- set system_message = "First draft your thinking process (inner monologue) until you arrive at a response. Your thinking process must follow the template below:[THINK]Your thoughts or/and draft.[/THINK]Here, provide a self-contained response." %}{%- set loop_messages = messages %}{%- endif %}[SYSTEM_PROMPT]{{ system_message }}[/SYSTEM_PROMPT]{%- if tools %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]{%- endif %}{%- for message in loop_messages %}{%- if message['role'] == 'user' %}[INST]{{ message['content'] }}[/INST]{%- elif message['role'] == 'assistant' %}{%- if message.tool_calls %}{%- for tc in message.tool_calls %}[TOOL_CALLS]{{ tc.function.name }}[ARGS]{% if tc.function.arguments is string %}{{ tc.function.arguments }}{% else %}{{ tc.function.arguments | tojson }}{% endif %}{%- endfor %}{{ eos_token }}{%- else %}{{ message['content'] }}{{ eos_token }}{%- endif %}{%- elif message['role'] == 'tool' %}[TOOL_RESULTS]{{ message['content'] }}[/TOOL_RESULTS]{%- endif %}{%- endfor %}`;

/** Llama 4 (model card): tools in the system turn, pythonic calls `[name(k=v)]`, results as `ipython` turns. */
export const LLAMA4_TEMPLATE = `{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content'] %}{%- set loop_messages = messages[1:] %}{%- else %}{%- set system_message = "" %}{%- set loop_messages = messages %}{%- endif %}
{%- if tools %}{%- set system_message = system_message + "You are a helpful assistant and an expert in function composition. You can answer general questions using your internal knowledge OR invoke functions when necessary. If ALL required parameters are present AND the query EXACTLY matches a listed function's purpose: output ONLY the function call(s). Use exact format: [func_name1(param1=value1, param2=value2), func_name2(...)]\\n\\nHere is a list of functions in JSON format that you can invoke.\\n" + (tools | tojson) %}{%- endif %}
{%- if system_message %}{{- '<|header_start|>system<|header_end|>\\n\\n' + system_message + '<|eot|>' }}{%- endif %}
{%- for message in loop_messages %}
{%- if message.role == 'assistant' and message.tool_calls %}{{- '<|header_start|>assistant<|header_end|>\\n\\n[' }}{%- for tc in message.tool_calls %}{{- tc.function.name + '(' }}{%- for k, v in tc.function.arguments | items %}{{- k + '=' + (v | tojson) }}{%- if not loop.last %}{{- ', ' }}{%- endif %}{%- endfor %}{{- ')' }}{%- if not loop.last %}{{- ', ' }}{%- endif %}{%- endfor %}{{- ']<|eot|>' }}
{%- elif message.role == 'tool' %}{{- '<|header_start|>ipython<|header_end|>\\n\\n' + message.content + '<|eot|>' }}
{%- else %}{{- '<|header_start|>' + message.role + '<|header_end|>\\n\\n' + message.content + '<|eot|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|header_start|>assistant<|header_end|>\\n\\n' }}{%- endif %}`;

/** Phi-4-mini (model card): the tools ride on the system message (`message['tools']`), calls in `<|tool_call|>`. */
export const PHI4_MINI_TEMPLATE =
  `{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}`;

/** Granite 3.3 (model card): an `available_tools` turn, calls as `<|tool_call|>[...]`, `tool_response` turns. */
export const GRANITE_TEMPLATE =
  `{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content'] %}{%- set loop_messages = messages[1:] %}{%- else %}{%- set system_message = "Knowledge Cutoff Date: April 2024.\\nYou are Granite, developed by IBM." %}{%- if tools %}{%- set system_message = system_message + " You are a helpful assistant with access to the following tools. When a tool is required to answer the user's query, respond only with <|tool_call|> followed by a JSON list of tools used." %}{%- endif %}{%- set loop_messages = messages %}{%- endif %}{{- '<|start_of_role|>system<|end_of_role|>' + system_message + '<|end_of_text|>\\n' }}{%- if tools %}{{- '<|start_of_role|>available_tools<|end_of_role|>' + (tools | tojson) + '<|end_of_text|>\\n' }}{%- endif %}{%- for message in loop_messages %}{%- if message['role'] == 'assistant' and message.tool_calls %}{{- '<|start_of_role|>assistant<|end_of_role|><|tool_call|>[' }}{%- for tc in message.tool_calls %}{{- tc.function | tojson }}{%- if not loop.last %}{{- ', ' }}{%- endif %}{%- endfor %}{{- ']<|end_of_text|>\\n' }}{%- elif message['role'] == 'tool' %}{{- '<|start_of_role|>tool_response<|end_of_role|>' + message['content'] + '<|end_of_text|>\\n' }}{%- else %}{{- '<|start_of_role|>' + message['role'] + '<|end_of_role|>' + message['content'] + '<|end_of_text|>\\n' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_of_role|>assistant<|end_of_role|>' }}{%- endif %}`;

/** LFM2 (model card): tools listed in the system turn, calls between `<|tool_call_start|>` and `<|tool_call_end|>`. */
export const LFM2_TEMPLATE =
  `{{- bos_token -}}{%- set ns = namespace(system_prompt="") -%}{%- if messages[0]["role"] == "system" -%}{%- set ns.system_prompt = messages[0]["content"] -%}{%- set loop_messages = messages[1:] -%}{%- else -%}{%- set loop_messages = messages -%}{%- endif -%}{%- if tools -%}{%- set ns.system_prompt = ns.system_prompt + ("\\n" if ns.system_prompt else "") + "List of tools: <|tool_list_start|>[" -%}{%- for tool in tools -%}{%- set ns.system_prompt = ns.system_prompt + (tool | tojson) -%}{%- if not loop.last -%}{%- set ns.system_prompt = ns.system_prompt + ", " -%}{%- endif -%}{%- endfor -%}{%- set ns.system_prompt = ns.system_prompt + "]<|tool_list_end|>" -%}{%- endif -%}{%- if ns.system_prompt -%}{{- "<|im_start|>system\\n" + ns.system_prompt + "<|im_end|>\\n" -}}{%- endif -%}{%- for message in loop_messages -%}{{- "<|im_start|>" + message["role"] + "\\n" -}}{%- set content = message["content"] -%}{%- if message["role"] == "tool" -%}{%- set content = "<|tool_response_start|>" + content + "<|tool_response_end|>" -%}{%- endif -%}{{- content + "<|im_end|>\\n" -}}{%- endfor -%}{%- if add_generation_prompt -%}{{- "<|im_start|>assistant\\n" -}}{%- endif -%}`;

/** Gemma 3's template (from its tokenizer_config.json): no tools of its own; roles must alternate. */
export const GEMMA3_TEMPLATE = `{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else "") }}
    {{- message['content'] | trim }}
    {{ '<end_of_turn>\\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\\n'}}
{%- endif -%}`;

/**
 * Command A / R7B (model card, condensed: the safety preamble left out): tools as a JSON list in the system
 * turn, calls as `<|START_THINKING|>plan<|END_THINKING|><|START_ACTION|>[{"tool_call_id": ..., "tool_name": ...,
 * "parameters": ...}]<|END_ACTION|>`, results in `<|START_TOOL_RESULT|>`, answers in `<|START_RESPONSE|>`.
 */
export const COMMAND_A_TEMPLATE = `{{ bos_token }}<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|># System Preamble
You are a helpful assistant.{% if tools %}

## Available Tools
Here is the list of tools that you have available to you.
You can ONLY use the tools listed here.

\`\`\`json
[
{% for tool in tools %}    {"name": "{{ tool.function.name }}", "description": "{{ tool.function.description }}", "parameters": {{ tool.function.parameters | tojson }}}{% if not loop.last %},{% endif %}
{% endfor %}]
\`\`\`{% endif %}{% if messages[0].role == 'system' %}

# Default Preamble
{{ messages[0].content }}{% endif %}<|END_OF_TURN_TOKEN|>
{%- set ns = namespace(call=0) %}
{%- for message in messages %}
{%- if message.role == 'user' %}<|START_OF_TURN_TOKEN|><|USER_TOKEN|>{{ message.content }}<|END_OF_TURN_TOKEN|>
{%- elif message.role == 'assistant' and message.tool_calls %}<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|>{{ message.content or '' }}<|END_THINKING|><|START_ACTION|>[
{%- for tc in message.tool_calls %}
    {"tool_call_id": "{{ loop.index0 }}", "tool_name": "{{ tc.function.name }}", "parameters": {{ tc.function.arguments | tojson }}}{% if not loop.last %},{% endif %}
{%- endfor %}
]<|END_ACTION|><|END_OF_TURN_TOKEN|>
{%- elif message.role == 'assistant' %}<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_RESPONSE|>{{ message.content }}<|END_RESPONSE|><|END_OF_TURN_TOKEN|>
{%- elif message.role == 'tool' %}<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|><|START_TOOL_RESULT|>[
    {"tool_call_id": "{{ ns.call }}", "results": {"0": {{ message.content | tojson }}}, "is_error": null}
]<|END_TOOL_RESULT|><|END_OF_TURN_TOKEN|>{% set ns.call = ns.call + 1 %}
{%- endif %}
{%- endfor %}<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>`;

/**
 * SmolLM3 (model card, condensed): ChatML with a metadata system turn, Hermes `<tool_call>` calls listed in
 * it, `<think>` reasoning (the generation prompt opens the reply; "/no_think" would close an empty block).
 * Its template renders only an assistant turn's content.
 */
export const SMOLLM3_TEMPLATE = `<|im_start|>system
## Metadata

Knowledge Cutoff Date: June 2025
Reasoning Mode: /think

## Custom Instructions

{% if messages[0].role == 'system' %}{{ messages[0].content }}{% else %}You are a helpful AI assistant named SmolLM, trained by Hugging Face.{% endif %}
{%- if tools %}

### Tools

You may call one or more functions to assist with the user query.
You are provided with function signatures within <tools></tools> XML tags:

<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>

For each function call, pass a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call>{% endif %}<|im_end|>
{% for message in messages %}{% if message.role == 'user' %}<|im_start|>user
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{{ message.content }}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and not enable_thinking %}<think>

</think>
{% endif %}{% endif %}`;
