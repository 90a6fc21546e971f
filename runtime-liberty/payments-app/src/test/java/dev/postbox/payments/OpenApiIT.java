package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.Operation;
import io.swagger.v3.oas.models.PathItem;
import io.swagger.v3.oas.models.media.Schema;
import io.swagger.v3.oas.models.parameters.Parameter;
import io.swagger.v3.oas.models.security.SecurityRequirement;
import io.swagger.v3.oas.models.security.SecurityScheme;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The payments app and the operator's API publish an OpenAPI document at {@code GET /openapi}
 * (mpOpenAPI): it validates, and it states the schemas, the role each path needs, and the 4xx
 * answers.
 */
class OpenApiIT {

  private final PaymentsApi api = new PaymentsApi();

  @Test
  void theDocumentValidatesAndDescribesTheOrdersApi() {
    OpenAPI doc = published();
    assertThat(doc.getOpenapi()).startsWith("3.");
    assertThat(doc.getInfo().getTitle()).isEqualTo("Postbox payments");

    Operation place = doc.getPaths().get("/orders").getPost();
    assertThat(place.getResponses()).containsKeys("201", "400", "409", "422");
    assertThat(
            place
                .getResponses()
                .get("201")
                .getContent()
                .get("application/json")
                .getSchema()
                .get$ref())
        .endsWith("/Order");
    assertThat(
            place
                .getResponses()
                .get("400")
                .getContent()
                .get("application/json")
                .getSchema()
                .get$ref())
        .endsWith("/Error");
    assertThat(place.getRequestBody().getContent().get("application/json").getSchema().get$ref())
        .endsWith("/OrderRequest");
    assertThat(place.getParameters())
        .extracting(Parameter::getName, Parameter::getIn)
        .contains(org.assertj.core.groups.Tuple.tuple("Idempotency-Key", "header"));
    assertThat(place.getSecurity()).as("placing an order needs no login").isNullOrEmpty();
    assertThat(doc.getPaths().get("/orders/{id}").getGet().getResponses())
        .containsKeys("200", "404");
    assertThat(doc.getPaths().get("/ledger").getGet().getResponses()).containsKey("200");
    assertThat(doc.getPaths().get("/orders").getGet().getResponses()).containsKeys("200", "400");

    Map<String, Schema> schemas = doc.getComponents().getSchemas();
    assertThat(schemas).containsKeys("Order", "OrderRequest", "Error");
    assertThat(schemas.get("OrderRequest").getProperties()).containsKeys("customer", "amountCents");
    assertThat(schemas.get("Error").getProperties()).containsOnlyKeys("error");
  }

  @Test
  void everyOperatorPathNeedsTheAdminRoleAndSaysSo() {
    OpenAPI doc = published();
    SecurityScheme basic = doc.getComponents().getSecuritySchemes().get("postbox-basic");
    assertThat(basic.getType()).isEqualTo(SecurityScheme.Type.HTTP);
    assertThat(basic.getScheme()).isEqualTo("basic");

    int operatorOperations = 0;
    for (Map.Entry<String, PathItem> path : doc.getPaths().entrySet()) {
      if (!path.getKey().startsWith("/admin") && !path.getKey().startsWith("/console")) {
        continue;
      }
      for (Operation op : path.getValue().readOperations()) {
        operatorOperations++;
        String where = path.getKey() + " " + op.getOperationId();
        List<SecurityRequirement> security = op.getSecurity();
        assertThat(security).as(where).isNotNull();
        assertThat(security.get(0)).as(where).containsEntry("postbox-basic", List.of());
        assertThat(op.getExtensions())
            .as(where)
            .containsEntry("x-postbox-roles", List.of("postbox-admin"));
        assertThat(op.getResponses()).as(where).containsKeys("401", "403");
        assertThat(op.getResponses().keySet())
            .as(where + ": a success answer too")
            .anyMatch(code -> code.startsWith("2") || code.startsWith("3"));
      }
    }
    assertThat(operatorOperations).isGreaterThanOrEqualTo(15);
    assertThat(doc.getPaths().get("/admin/dead-letters/{id}/replay").getPost().getResponses())
        .containsKeys("200", "400", "404", "409");
    assertThat(doc.getPaths().get("/admin/outbox/failed/{id}/retry").getPost().getResponses())
        .containsKeys("200", "400", "404");
    // A generated success answer keeps its schema.
    assertThat(
            doc.getPaths()
                .get("/admin/dead-letters/groups")
                .getGet()
                .getResponses()
                .get("200")
                .getContent()
                .get("application/json")
                .getSchema()
                .getItems()
                .get$ref())
        .endsWith("/DeadLetterGroup");
  }

  @Test
  void theDocumentIsOpenAndServedAsYamlAndJson() {
    var yaml = api.get("/openapi");
    assertThat(yaml.statusCode()).isEqualTo(200);
    assertThat(yaml.body()).containsPattern("(?m)^openapi: 3\\.");
    var json = api.get("/openapi?format=JSON");
    assertThat(json.statusCode()).isEqualTo(200);
    assertThat(json.body()).startsWith("{").contains("\"openapi\"");
  }

  /** The served document, parsed and validated; any message of the parser fails the test. */
  private OpenAPI published() {
    var response = api.get("/openapi?format=JSON");
    assertThat(response.statusCode()).isEqualTo(200);
    ParseOptions options = new ParseOptions();
    options.setResolve(false);
    SwaggerParseResult result = new OpenAPIV3Parser().readContents(response.body(), null, options);
    assertThat(result.getMessages()).as("the validator's messages").isEmpty();
    assertThat(result.getOpenAPI()).isNotNull();
    return result.getOpenAPI();
  }
}
