// Owns the tool definitions the chat end-to-end tests share (chat-tiny answers "What's the weather in
// Paris?" with a call to this one).
export const WEATHER_TOOL = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Get the current weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
