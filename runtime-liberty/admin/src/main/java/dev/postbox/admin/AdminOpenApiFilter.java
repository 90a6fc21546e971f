package dev.postbox.admin;

import java.util.Map;
import org.eclipse.microprofile.openapi.OASFactory;
import org.eclipse.microprofile.openapi.OASFilter;
import org.eclipse.microprofile.openapi.models.OpenAPI;
import org.eclipse.microprofile.openapi.models.Operation;
import org.eclipse.microprofile.openapi.models.PathItem;
import org.eclipse.microprofile.openapi.models.media.Content;
import org.eclipse.microprofile.openapi.models.media.Schema;
import org.eclipse.microprofile.openapi.models.responses.APIResponses;

/**
 * Adds what every operation of the operator's API shares to the OpenAPI document ({@code
 * mpOpenAPI}), so each resource method keeps the success answer generated from its return type: the
 * {@code postbox-basic} security requirement with the role {@code postbox-admin}, and the 400, 401
 * and 403 answers with the {@code Error} body. Registered by this jar's
 * META-INF/microprofile-config.properties ({@code mp.openapi.filter}); an application with a filter
 * of its own can call {@link #addOperatorAnswers} from it.
 */
public class AdminOpenApiFilter implements OASFilter {

  /** The extension that names the roles an operation needs. */
  public static final String ROLES = "x-postbox-roles";

  @Override
  public void filterOpenAPI(OpenAPI openAPI) {
    addOperatorAnswers(openAPI);
  }

  /** Adds the role and the shared 4xx answers to every {@code /admin} and {@code /console} path. */
  public static void addOperatorAnswers(OpenAPI openAPI) {
    if (openAPI.getPaths() == null || openAPI.getPaths().getPathItems() == null) {
      return;
    }
    if (openAPI.getComponents() == null) {
      openAPI.setComponents(OASFactory.createComponents());
    }
    if (openAPI.getComponents().getSchemas() == null
        || !openAPI.getComponents().getSchemas().containsKey("Error")) {
      openAPI
          .getComponents()
          .addSchema(
              "Error",
              OASFactory.createSchema()
                  .addType(Schema.SchemaType.OBJECT)
                  .description("What was wrong with the request, in words; never a stack trace.")
                  .addProperty(
                      "error", OASFactory.createSchema().addType(Schema.SchemaType.STRING)));
    }
    for (Map.Entry<String, PathItem> path : openAPI.getPaths().getPathItems().entrySet()) {
      boolean api = path.getKey().startsWith("/admin");
      if (!api && !path.getKey().startsWith("/console")) {
        continue;
      }
      for (Operation op : path.getValue().getOperations().values()) {
        if (op.getSecurity() == null || op.getSecurity().isEmpty()) {
          op.addSecurityRequirement(
              OASFactory.createSecurityRequirement().addScheme(AdminResource.SECURITY));
        }
        // The role: an HTTP scheme's requirement lists none (validators refuse them there).
        op.addExtension(ROLES, java.util.List.of(AdminResource.ROLE));
        APIResponses answers = op.getResponses();
        if (answers == null) {
          answers = OASFactory.createAPIResponses();
          op.setResponses(answers);
        }
        if (api && !answers.hasAPIResponse("400")) {
          answers.addAPIResponse(
              "400",
              OASFactory.createAPIResponse()
                  .description("Bad input (an id, a page size, a filter); the message names it.")
                  .content(error()));
        }
        if (!answers.hasAPIResponse("401")) {
          answers.addAPIResponse(
              "401", OASFactory.createAPIResponse().description("No credentials, or wrong ones."));
        }
        if (!answers.hasAPIResponse("403")) {
          answers.addAPIResponse(
              "403",
              OASFactory.createAPIResponse()
                  .description(
                      "Authenticated without the role "
                          + AdminResource.ROLE
                          + ", or a cross-site request.")
                  .content(error()));
        }
      }
    }
  }

  private static Content error() {
    return OASFactory.createContent()
        .addMediaType(
            "application/json",
            OASFactory.createMediaType()
                .schema(OASFactory.createSchema().ref("#/components/schemas/Error")));
  }
}
