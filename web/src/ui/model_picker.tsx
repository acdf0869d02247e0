// The model picker: which configured model (model.list) the open thread's next turns use. A running turn
// keeps the model it started with; the choice applies from the next one (thread.setModel). With no thread
// open it picks the model of the thread the next message creates.
import type { AppStore, ModelInfo, ThreadView } from "../store";

function describe(model: ModelInfo, isDefault: boolean): string {
  const parts = [model.name];
  if (model.modelId !== model.name) parts.push(`(${model.modelId})`);
  if (isDefault) parts.push("— default");
  return parts.join(" ");
}

export function ModelPicker({ store, view }: { store: AppStore; view: ThreadView | null }) {
  const models = store.models.value;
  if (models.length === 0) return null;
  const fallback = store.defaultModel.value;
  const chosen =
    view === null ? store.newThreadModel.value : (store.threads.value.find((t) => t.threadId === view.threadId)?.model ?? null);
  const value = chosen ?? fallback ?? "";
  const missing = chosen !== null && !models.some((m) => m.name === chosen);
  return (
    <label class="model-picker">
      Model{" "}
      <select value={value} onChange={(e) => void store.setModel((e.target as HTMLSelectElement).value)}>
        {missing && (
          <option value={chosen} disabled>
            {chosen} (no longer configured)
          </option>
        )}
        {models.map((m) => (
          <option key={m.name} value={m.name}>
            {describe(m, m.name === fallback)}
          </option>
        ))}
      </select>
    </label>
  );
}
