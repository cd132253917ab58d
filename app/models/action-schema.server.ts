// The action vocabulary lives in app/protocol/ (one definition, bundled into the in-box agent
// too). This module keeps the names the server's models and routes import.
export {
  ArrangeSchema,
  BatchSchema,
  CaptureSchema,
  ExecSchema,
  GlobSchema,
  GrepSchema,
  INPUT_STEPS,
  LATER_STEPS,
  PointSchema,
  RegionSchema,
  STEP_TYPES,
  StepSchema,
  WaitWindowSchema,
  WriteFileSchema,
  type Step,
  type WireStep,
} from "../protocol/actions";
