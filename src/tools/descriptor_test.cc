// Tests for make_tool_descriptor() and ToolDescriptor (keel/tool_registry.h): validation, §4's defaults,
// the catalog entry and its digest.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "keel/error_codes.h"
#include "keel/tool_registry.h"
#include "util/canonical_json.h"
#include "util/sha256.h"

namespace keel {
namespace {

ToolSpec valid_spec(ToolLevel level = ToolLevel::kBuiltin, ToolEffects effects = ToolEffects::kRead) {
  ToolSpec spec;
  spec.name = "read_thing";
  spec.label = "Read thing";
  spec.description = "Reads a thing.";
  spec.parameters = {{"type", "object"},
                     {"properties", {{"id", {{"type", "string"}}}}},
                     {"required", {"id"}},
                     {"additionalProperties", false}};
  spec.level = level;
  spec.effects = effects;
  if (level == ToolLevel::kMcp) {
    spec.binding.kind = ToolBinding::Kind::kMcp;
    spec.binding.server = "files";
    spec.binding.endpoint = "npx @modelcontextprotocol/server-filesystem /tmp";
    spec.binding.auth_identity = "cred-1";
  }
  return spec;
}

ToolDescriptor describe(const ToolSpec& spec) {
  auto descriptor = make_tool_descriptor(spec);
  EXPECT_TRUE(descriptor.has_value()) << descriptor.error().to_string();
  return descriptor.value_or(ToolDescriptor{});
}

void expect_invalid(const ToolSpec& spec, const std::string& message_part = "") {
  auto descriptor = make_tool_descriptor(spec);
  ASSERT_FALSE(descriptor.has_value()) << "accepted " << spec.name;
  EXPECT_EQ(descriptor.error().code(), codes::kInvalidArgument) << descriptor.error().to_string();
  EXPECT_NE(descriptor.error().message().find(message_part), std::string::npos)
      << descriptor.error().to_string();
}

TEST(ToolEnumNamesTest, EveryEnumeratorHasItsSpecName) {
  EXPECT_EQ(to_string(ToolLevel::kL0), "L0");
  EXPECT_EQ(to_string(ToolLevel::kL1), "L1");
  EXPECT_EQ(to_string(ToolLevel::kL2), "L2");
  EXPECT_EQ(to_string(ToolLevel::kMcp), "mcp");
  EXPECT_EQ(to_string(ToolLevel::kBuiltin), "builtin");
  EXPECT_EQ(to_string(ToolEffects::kRead), "read");
  EXPECT_EQ(to_string(ToolEffects::kWrite), "write");
  EXPECT_EQ(to_string(ToolRecovery::kRetrySafe), "retry-safe");
  EXPECT_EQ(to_string(ToolRecovery::kInspectFirst), "inspect-first");
  EXPECT_EQ(to_string(ToolRecovery::kNeverRetry), "never-retry");
  EXPECT_EQ(to_string(ToolTrust::kTrusted), "trusted");
  EXPECT_EQ(to_string(ToolTrust::kUntrusted), "untrusted");
  EXPECT_EQ(to_string(ToolProvenance::kTool), "tool");
  EXPECT_EQ(to_string(ToolProvenance::kMcp), "mcp");
  EXPECT_EQ(to_string(ToolProvenance::kPage), "page");
}

// --- defaults (spec §4), for every level x effects combination ---

struct DefaultsCase {
  ToolLevel level;
  ToolEffects effects;
  ToolRecovery recovery;
  ToolTrust trust;
  ToolProvenance provenance;
};

class DescriptorDefaultsTest : public ::testing::TestWithParam<DefaultsCase> {};

TEST_P(DescriptorDefaultsTest, UnsetSecurityMetadataTakesTheSpecDefaults) {
  const DefaultsCase& c = GetParam();
  const ToolDescriptor d = describe(valid_spec(c.level, c.effects));
  EXPECT_EQ(d.level, c.level);
  EXPECT_EQ(d.effects, c.effects);
  EXPECT_EQ(d.recovery, c.recovery);
  EXPECT_EQ(d.trust, c.trust);
  EXPECT_EQ(d.provenance, c.provenance);
}

using L = ToolLevel;
using E = ToolEffects;
using R = ToolRecovery;
using T = ToolTrust;
using P = ToolProvenance;
INSTANTIATE_TEST_SUITE_P(
    AllLevelsAndEffects, DescriptorDefaultsTest,
    ::testing::Values(DefaultsCase{L::kBuiltin, E::kRead, R::kRetrySafe, T::kTrusted, P::kTool},
                      DefaultsCase{L::kBuiltin, E::kWrite, R::kNeverRetry, T::kTrusted, P::kTool},
                      DefaultsCase{L::kMcp, E::kRead, R::kRetrySafe, T::kUntrusted, P::kMcp},
                      DefaultsCase{L::kMcp, E::kWrite, R::kNeverRetry, T::kUntrusted, P::kMcp},
                      DefaultsCase{L::kL0, E::kRead, R::kRetrySafe, T::kUntrusted, P::kPage},
                      DefaultsCase{L::kL0, E::kWrite, R::kNeverRetry, T::kUntrusted, P::kPage},
                      DefaultsCase{L::kL1, E::kRead, R::kRetrySafe, T::kUntrusted, P::kPage},
                      DefaultsCase{L::kL1, E::kWrite, R::kNeverRetry, T::kUntrusted, P::kPage},
                      DefaultsCase{L::kL2, E::kRead, R::kRetrySafe, T::kUntrusted, P::kPage},
                      DefaultsCase{L::kL2, E::kWrite, R::kNeverRetry, T::kUntrusted, P::kPage}),
    [](const ::testing::TestParamInfo<DefaultsCase>& param_info) {
      return std::string(to_string(param_info.param.level)) + "_" +
             std::string(to_string(param_info.param.effects));
    });

TEST(DescriptorTest, ExplicitRecoveryTrustAndProvenanceOverrideTheDefaults) {
  ToolSpec spec = valid_spec(ToolLevel::kL1, ToolEffects::kWrite);
  spec.recovery = ToolRecovery::kInspectFirst;
  spec.trust = ToolTrust::kTrusted;
  spec.provenance = ToolProvenance::kTool;
  const ToolDescriptor d = describe(spec);
  EXPECT_EQ(d.recovery, ToolRecovery::kInspectFirst);
  EXPECT_EQ(d.trust, ToolTrust::kTrusted);
  EXPECT_EQ(d.provenance, ToolProvenance::kTool);

  ToolSpec builtin = valid_spec(ToolLevel::kBuiltin, ToolEffects::kRead);
  builtin.recovery = ToolRecovery::kNeverRetry;
  builtin.trust = ToolTrust::kUntrusted;
  builtin.provenance = ToolProvenance::kPage;
  const ToolDescriptor b = describe(builtin);
  EXPECT_EQ(b.recovery, ToolRecovery::kNeverRetry);
  EXPECT_EQ(b.trust, ToolTrust::kUntrusted);
  EXPECT_EQ(b.provenance, ToolProvenance::kPage);
}

TEST(DescriptorTest, CopiesNameLabelDescriptionAndBinding) {
  const ToolSpec spec = valid_spec(ToolLevel::kMcp);
  const ToolDescriptor d = describe(spec);
  EXPECT_EQ(d.name, spec.name);
  EXPECT_EQ(d.label, spec.label);
  EXPECT_EQ(d.description, spec.description);
  EXPECT_EQ(d.binding.kind, ToolBinding::Kind::kMcp);
  EXPECT_EQ(d.binding.server, "files");
  EXPECT_EQ(d.binding.endpoint, spec.binding.endpoint);
  EXPECT_EQ(d.binding.auth_identity, "cred-1");
  EXPECT_EQ(d.parameters, spec.parameters);
}

// --- bindings ---

TEST(DescriptorTest, McpLevelWithLocalBindingIsRejected) {
  ToolSpec spec = valid_spec(ToolLevel::kMcp);
  spec.binding = ToolBinding{};
  expect_invalid(spec, "MCP binding");
}

TEST(DescriptorTest, McpBindingWithoutServerOrEndpointIsRejected) {
  ToolSpec no_server = valid_spec(ToolLevel::kMcp);
  no_server.binding.server = "";
  expect_invalid(no_server, "server");
  ToolSpec no_endpoint = valid_spec(ToolLevel::kMcp);
  no_endpoint.binding.endpoint = "";
  expect_invalid(no_endpoint, "endpoint");
}

TEST(DescriptorTest, McpBindingWithoutAuthIdentityIsAccepted) {
  ToolSpec spec = valid_spec(ToolLevel::kMcp);
  spec.binding.auth_identity = "";
  EXPECT_EQ(describe(spec).binding.auth_identity, "");
}

TEST(DescriptorTest, LocalLevelsWithMcpBindingAreRejected) {
  for (const ToolLevel level : {ToolLevel::kL0, ToolLevel::kL1, ToolLevel::kL2, ToolLevel::kBuiltin}) {
    ToolSpec spec = valid_spec(ToolLevel::kMcp);
    spec.level = level;  // keeps the MCP binding
    expect_invalid(spec, "local binding");
  }
}

TEST(DescriptorTest, LocalBindingNamingAServerIsRejected) {
  ToolSpec spec = valid_spec();
  spec.binding.server = "files";
  expect_invalid(spec, "local binding");
}

// --- names, display text, schema ---

TEST(DescriptorTest, InvalidNamesAreRejected) {
  for (const std::string& name :
       {std::string(""), std::string(65, 'a'), std::string("has space"), std::string("dot.name"),
        std::string("slash/name"), std::string("n\xC3\xA4me"), std::string("tab\t")}) {
    ToolSpec spec = valid_spec();
    spec.name = name;
    expect_invalid(spec, "tool name");
  }
}

TEST(DescriptorTest, NamesOfLettersDigitsUnderscoreAndDashUpTo64AreAccepted) {
  for (const std::string& name : {std::string("a"), std::string(64, 'z'), std::string("Read_File-2")}) {
    ToolSpec spec = valid_spec();
    spec.name = name;
    EXPECT_EQ(describe(spec).name, name);
  }
}

TEST(DescriptorTest, EmptyOrBlankLabelAndDescriptionAreRejected) {
  ToolSpec no_label = valid_spec();
  no_label.label = "";
  expect_invalid(no_label, "label");
  ToolSpec blank_label = valid_spec();
  blank_label.label = " \t";
  expect_invalid(blank_label, "label");
  ToolSpec no_description = valid_spec();
  no_description.description = "";
  expect_invalid(no_description, "description");
}

TEST(DescriptorTest, ErrorMessageNamesTheTool) {
  ToolSpec spec = valid_spec();
  spec.label = "";
  expect_invalid(spec, "read_thing");
}

TEST(DescriptorTest, SchemaWithoutTypeIsNormalizedToTypeObject) {
  ToolSpec spec = valid_spec();
  spec.parameters = {{"properties", {{"id", {{"type", "string"}}}}}};
  const ToolDescriptor d = describe(spec);
  EXPECT_EQ(d.parameters.at("type"), "object");
  EXPECT_EQ(d.parameters.at("properties"), spec.parameters.at("properties"));
  EXPECT_EQ(d.provider_tool().input_schema.at("type"), "object");
}

TEST(DescriptorTest, EmptySchemaBecomesAnObjectSchema) {
  ToolSpec spec = valid_spec();
  spec.parameters = nlohmann::json::object();
  EXPECT_EQ(describe(spec).parameters, (nlohmann::json{{"type", "object"}}));
}

TEST(DescriptorTest, SchemaOfAnotherTypeIsRejected) {
  for (const nlohmann::json& type : {nlohmann::json("array"), nlohmann::json("string"),
                                     nlohmann::json::array({"object"}), nlohmann::json(nullptr)}) {
    ToolSpec spec = valid_spec();
    spec.parameters = {{"type", type}};
    expect_invalid(spec, "\"type\": \"object\"");
  }
}

TEST(DescriptorTest, SchemaThatIsNotAnObjectIsRejected) {
  for (const nlohmann::json& schema :
       {nlohmann::json::array(), nlohmann::json(nullptr), nlohmann::json("object"), nlohmann::json(true)}) {
    ToolSpec spec = valid_spec();
    spec.parameters = schema;
    expect_invalid(spec, "parameters");
  }
}

TEST(DescriptorTest, UnusableSchemaIsRejected) {
  ToolSpec spec = valid_spec();
  spec.parameters = {{"type", "object"}, {"properties", {{"id", {{"type", "no-such-type"}}}}}};
  expect_invalid(spec, "JSON Schema");
}

TEST(DescriptorTest, TextThatIsNotValidUtf8IsRejected) {
  ToolSpec spec = valid_spec();
  spec.description = "bad \xFF byte";
  expect_invalid(spec);
}

// --- catalog entry, provider tool, summary ---

TEST(DescriptorTest, CatalogEntryHasEveryFieldWithCamelCaseKeys) {
  const ToolDescriptor d = describe(valid_spec(ToolLevel::kMcp, ToolEffects::kWrite));
  const nlohmann::json entry = d.catalog_entry();
  const nlohmann::json expected = {
      {"name", "read_thing"},
      {"label", "Read thing"},
      {"description", "Reads a thing."},
      {"parameters", d.parameters},
      {"level", "mcp"},
      {"effects", "write"},
      {"recovery", "never-retry"},
      {"trust", "untrusted"},
      {"provenance", "mcp"},
      {"binding",
       {{"kind", "mcp"},
        {"server", "files"},
        {"endpoint", "npx @modelcontextprotocol/server-filesystem /tmp"},
        {"authIdentity", "cred-1"}}},
      {"digest", d.digest},
  };
  EXPECT_EQ(entry, expected);
}

TEST(DescriptorTest, NeedsVisionIsInTheCatalogEntryAndDigestOnlyWhenSet) {
  const ToolDescriptor plain = describe(valid_spec());
  EXPECT_FALSE(plain.needs_vision);
  EXPECT_FALSE(plain.catalog_entry().contains("needsVision")) << "entries of existing tools stay the same";
  EXPECT_FALSE(plain.hidden_without_vision());

  ToolSpec spec = valid_spec();
  spec.needs_vision = true;
  const ToolDescriptor seeing = describe(spec);
  EXPECT_TRUE(seeing.needs_vision);
  EXPECT_EQ(seeing.catalog_entry().at("needsVision"), true);
  EXPECT_NE(seeing.digest, plain.digest);
  EXPECT_TRUE(seeing.hidden_without_vision());
}

TEST(DescriptorTest, AToolNamedScreenshotIsHiddenWithoutVisionAsBeforeNeedsVisionExisted) {
  ToolSpec spec = valid_spec();
  spec.name = "screenshot";
  const ToolDescriptor d = describe(spec);
  EXPECT_FALSE(d.needs_vision);
  EXPECT_TRUE(d.hidden_without_vision());
}

TEST(DescriptorTest, LocalBindingAppearsAsKindLocalWithEmptyFields) {
  const nlohmann::json binding = describe(valid_spec()).catalog_entry().at("binding");
  EXPECT_EQ(binding,
            (nlohmann::json{{"kind", "local"}, {"server", ""}, {"endpoint", ""}, {"authIdentity", ""}}));
}

TEST(DescriptorTest, DigestIsSha256OfTheCanonicalEntryWithoutDigest) {
  const ToolDescriptor d = describe(valid_spec());
  nlohmann::json entry = d.catalog_entry();
  entry.erase("digest");
  const auto canonical = canonical_json(entry);
  ASSERT_TRUE(canonical.has_value());
  EXPECT_EQ(d.digest, sha256_hex(*canonical));
  EXPECT_EQ(d.digest.size(), 64u);
}

TEST(DescriptorTest, DigestDoesNotDependOnKeyOrderOrRepetition) {
  ToolSpec a = valid_spec();
  a.parameters = nlohmann::json::parse(
      R"({"type":"object","required":["id"],"properties":{"id":{"type":"string","minLength":1},"n":{"type":"integer"}}})");
  ToolSpec b = valid_spec();
  b.parameters = nlohmann::json::parse(
      R"({"properties":{"n":{"type":"integer"},"id":{"minLength":1,"type":"string"}},"required":["id"],"type":"object"})");
  EXPECT_EQ(describe(a).digest, describe(b).digest);
  EXPECT_EQ(describe(a).digest, describe(a).digest);
}

TEST(DescriptorTest, NormalizingTheSchemaGivesTheSameDigestAsWritingTypeObject) {
  ToolSpec implicit = valid_spec();
  implicit.parameters.erase("type");
  EXPECT_EQ(describe(implicit).digest, describe(valid_spec()).digest);
}

TEST(DescriptorTest, DigestChangesWithSchemaSecurityMetadataAndBinding) {
  const std::string base = describe(valid_spec(ToolLevel::kMcp)).digest;

  ToolSpec schema = valid_spec(ToolLevel::kMcp);
  schema.parameters["properties"]["id"]["minLength"] = 1;
  EXPECT_NE(describe(schema).digest, base);

  ToolSpec effects = valid_spec(ToolLevel::kMcp, ToolEffects::kWrite);
  EXPECT_NE(describe(effects).digest, base);

  ToolSpec recovery = valid_spec(ToolLevel::kMcp);
  recovery.recovery = ToolRecovery::kInspectFirst;
  EXPECT_NE(describe(recovery).digest, base);

  ToolSpec trust = valid_spec(ToolLevel::kMcp);
  trust.trust = ToolTrust::kTrusted;
  EXPECT_NE(describe(trust).digest, base);

  ToolSpec server = valid_spec(ToolLevel::kMcp);
  server.binding.server = "other";
  EXPECT_NE(describe(server).digest, base);

  ToolSpec endpoint = valid_spec(ToolLevel::kMcp);
  endpoint.binding.endpoint = "https://example.com/mcp";
  EXPECT_NE(describe(endpoint).digest, base);

  ToolSpec auth = valid_spec(ToolLevel::kMcp);
  auth.binding.auth_identity = "cred-2";
  EXPECT_NE(describe(auth).digest, base);
}

TEST(DescriptorTest, ExplicitDefaultGivesTheSameDigestAsTheImplicitDefault) {
  ToolSpec spec = valid_spec(ToolLevel::kBuiltin, ToolEffects::kWrite);
  spec.recovery = ToolRecovery::kNeverRetry;
  spec.trust = ToolTrust::kTrusted;
  spec.provenance = ToolProvenance::kTool;
  EXPECT_EQ(describe(spec).digest, describe(valid_spec(ToolLevel::kBuiltin, ToolEffects::kWrite)).digest);
}

TEST(DescriptorTest, ProviderToolCarriesNameDescriptionAndSchema) {
  const ToolDescriptor d = describe(valid_spec());
  const ProviderTool tool = d.provider_tool();
  EXPECT_EQ(tool.name, "read_thing");
  EXPECT_EQ(tool.description, "Reads a thing.");
  EXPECT_EQ(tool.input_schema, d.parameters);
}

TEST(DescriptorTest, SummaryNamesLevelEffectsRecoveryAndBinding) {
  EXPECT_EQ(describe(valid_spec(ToolLevel::kBuiltin, ToolEffects::kWrite)).summary(),
            "level=builtin effects=write recovery=never-retry binding=local");
  EXPECT_EQ(describe(valid_spec(ToolLevel::kMcp)).summary(),
            "level=mcp effects=read recovery=retry-safe binding=mcp(server=files, endpoint=npx "
            "@modelcontextprotocol/server-filesystem /tmp, auth=cred-1)");
}

}  // namespace
}  // namespace keel
