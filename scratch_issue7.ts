import { startTestServer } from "./tests/helpers.ts";
import { z } from "zod";
import { zodResponseFormat } from "openai/helpers/zod";
import { prng } from "./src/engines/constrain/synthetic_vocab.ts";
import { randomSchema } from "./src/engines/constrain/test_support.ts";
const s = await startTestServer();
const c = s.client;
try {
  const Weather = z.object({ sky: z.enum(["sunny", "cloudy", "rainy"]), temperature: z.number().int().min(-40).max(50), windy: z.boolean(), alerts: z.array(z.enum(["storm", "heat", "frost"])).max(2), station: z.object({ id: z.number().int(), indoor: z.boolean().nullable() }), note: z.union([z.literal("none"), z.number()]) });
  for (const content of ["Hi there!", "Count forever", "What's the weather in Paris?"]) {
    const r = await c.chat.completions.parse({ model: "chat-tiny", messages: [{ role: "user", content }], response_format: zodResponseFormat(Weather, "w"), max_tokens: 200 });
    console.log(r.choices[0].message.content, r.usage?.completion_tokens);
  }
  const rand = prng(2025);
  const fin: Record<string, number> = {};
  for (let i = 0; i < 30; i++) {
    let schema = randomSchema(rand);
    while (JSON.stringify(schema).length > 2000) schema = randomSchema(rand);
    const r = await c.chat.completions.create({ model: "chat-tiny", messages: [{ role: "user", content: "Hi there!" }], response_format: { type: "json_schema", json_schema: { name: "x", schema } }, max_tokens: 200 });
    fin[r.choices[0].finish_reason] = (fin[r.choices[0].finish_reason] ?? 0) + 1;
    if (i < 6) console.log(r.choices[0].finish_reason, r.usage?.completion_tokens, r.choices[0].message.content?.slice(0, 150));
  }
  console.log(fin);
} finally { await s.close(); }
