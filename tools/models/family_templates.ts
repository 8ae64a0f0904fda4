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
