"""Google-style error answers (the JSON shape every Google REST API uses)."""

from __future__ import annotations

from typing import Any

# HTTP status -> canonical status word
STATUS_WORDS: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

GENERIC_MESSAGES: dict[int, str] = {
    429: "Quota exceeded for quota metric 'Read requests' and limit 'Read requests per minute' "
    "of service 'tpu.googleapis.com'.",
    500: "Internal error encountered.",
    502: "Bad gateway.",
    503: "The service is currently unavailable.",
    504: "The request deadline was exceeded.",
}


class ApiError(Exception):
    """An error answer of the emulated API."""

    def __init__(
        self,
        code: int,
        message: str,
        status: str | None = None,
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or STATUS_WORDS.get(code, "UNKNOWN")
        self.details = details or []

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message, "status": self.status}
        if self.details:
            error["details"] = self.details
        return {"error": error}


def error_info(reason: str, domain: str, metadata: dict[str, str]) -> dict[str, Any]:
    return {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": reason,
        "domain": domain,
        "metadata": metadata,
    }


def generic(code: int) -> ApiError:
    return ApiError(code, GENERIC_MESSAGES.get(code, f"HTTP {code}."))


def unauthenticated() -> ApiError:
    return ApiError(
        401,
        "Request is missing required authentication credential. Expected OAuth 2 access token, "
        "login cookie or other valid authentication credential.",
        details=[
            error_info("CREDENTIALS_MISSING", "googleapis.com", {"service": "tpu.googleapis.com"})
        ],
    )


def invalid_token() -> ApiError:
    return ApiError(
        401,
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
        "cookie or other valid authentication credential.",
        details=[
            error_info(
                "ACCESS_TOKEN_TYPE_UNSUPPORTED", "googleapis.com", {"service": "tpu.googleapis.com"}
            )
        ],
    )


def scope_insufficient() -> ApiError:
    return ApiError(
        403,
        "Request had insufficient authentication scopes.",
        details=[
            error_info(
                "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
                "googleapis.com",
                {"service": "tpu.googleapis.com", "method": "google.cloud.tpu.v2.Tpu"},
            )
        ],
    )


def service_disabled(project_number: str) -> ApiError:
    return ApiError(
        403,
        f"Cloud TPU API has not been used in project {project_number} before or it is disabled. "
        "Enable it by visiting the API's overview page in the Google Cloud console, then retry. If "
        "you enabled this API recently, wait a few minutes for the action to propagate to our "
        "systems and retry.",
        details=[
            error_info(
                "SERVICE_DISABLED",
                "googleapis.com",
                {
                    "service": "tpu.googleapis.com",
                    "consumer": f"projects/{project_number}",
                    "serviceTitle": "Cloud TPU API",
                },
            )
        ],
    )


def permission_denied(permission: str, resource: str) -> ApiError:
    return ApiError(
        403,
        f"Permission '{permission}' denied on '{resource}' (or it may not exist).",
        details=[
            error_info(
                "IAM_PERMISSION_DENIED",
                "tpu.googleapis.com",
                {"permission": permission, "resource": resource},
            )
        ],
    )


def not_found(resource: str) -> ApiError:
    return ApiError(404, f"Resource '{resource}' was not found.")


def location_not_found(location: str) -> ApiError:
    return ApiError(404, f"Location {location} is not found or access is unauthorized.")


def invalid(message: str, field: str | None = None) -> ApiError:
    details = []
    if field:
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": field, "description": message}],
            }
        )
    return ApiError(400, message, details=details)


def failed_precondition(message: str) -> ApiError:
    return ApiError(400, message, status="FAILED_PRECONDITION")


def already_exists(resource: str) -> ApiError:
    return ApiError(409, f"Resource '{resource}' already exists.")
